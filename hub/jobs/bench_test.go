// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// benchQueues are the queues of the benchmark jobs; job i goes to
// benchQueues[i%len].
var benchQueues = []string{"org/research/llm", "org/research/vision", "org/prod/serving", "org/batch/eval"}

// benchJob is a realistic submission: 8 members × 8 GPUs, a rack rule and a
// trainer container with a command and 15 environment variables.
func benchJob(name, queue string) *v1alpha1.Job {
	j := job(name, queue)
	j.Labels = map[string]string{"team": "research", "project": "llm-pretrain"}
	j.Spec.Gang = v1alpha1.Gang{Members: 8, GPUsPerMember: 8}
	j.Spec.Placement.Topology.Required = v1alpha1.TopologyRack
	c := &j.Spec.Template.Spec.Containers[0]
	c.Image = "registry.example.com/research/trainer:v1.2.3"
	c.Command = []string{"torchrun", "--nnodes=8", "--nproc-per-node=8", "train.py", "--config=configs/llm-7b.yaml"}
	for i := range 15 {
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("ENV_VAR_%02d", i), Value: strings.Repeat("v", 60)})
	}
	return j
}

// openBench starts a dedicated embedded etcd (fsync on unless unsafe) with the benchmark queues.
func openBench(b *testing.B, unsafe bool) (*store.Store, *jobs.Service) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: b.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: unsafe}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	js := jobs.New(st)
	qs := queues.New(st, js)
	for _, q := range benchQueues {
		if _, _, err := qs.Create(ctx, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q}}); err != nil {
			b.Fatal(err)
		}
	}
	return st, js
}

// BenchmarkSubmit measures accepted submissions per second (defaulting,
// validation, queue check and the guarded write) from 16 concurrent
// submitters on embedded etcd. The jobs/s metric is the figure to compare
// with the 1,000 jobs/s target.
func BenchmarkSubmit(b *testing.B) {
	for _, mode := range []struct {
		name   string
		unsafe bool
	}{{"fsync", false}, {"UnsafeNoFsync", true}} {
		b.Run(mode.name, func(b *testing.B) {
			_, js := openBench(b, mode.unsafe)
			var seq atomic.Int64
			const clients = 16
			b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			ctx := context.Background()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					name := fmt.Sprintf("job-%07d", i)
					_, _, res, err := js.Submit(ctx, benchJob(name, benchQueues[i%int64(len(benchQueues))]), false)
					if err != nil || res != jobs.Created {
						b.Errorf("submit %s: %v %v", name, res, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkList100k measures List with 100k stored jobs: the first page
// of 500, a page of 500 filtered by queue (a quarter of the jobs match), and a
// filter that matches nothing (a full scan of the 100k).
func BenchmarkList100k(b *testing.B) {
	if testing.Short() {
		b.Skip("stores 100k jobs")
	}
	const total = 100_000
	st, js := openBench(b, true)
	seed(b, st, total)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts jobs.ListOptions
		want int
	}{
		{"page500", jobs.ListOptions{Limit: 500}, 500},
		{"queue-filter-page500", jobs.ListOptions{Limit: 500, Queue: benchQueues[1]}, 500},
		{"no-match-full-scan", jobs.ListOptions{Limit: 500, Phase: v1alpha1.JobFailed}, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := js.List(ctx, bc.opts)
				if err != nil || len(res.Items) != bc.want {
					b.Fatalf("%d items, %v", len(res.Items), err)
				}
			}
		})
	}
}

// seed stores n submitted-looking jobs directly, 100 per transaction.
func seed(b *testing.B, st *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	c := jobs.NewCollection(st)
	now := metav1.Now()
	submitted := v1alpha1.NewMicroTime(now.Time)
	for i := 0; i < n; i += 100 {
		txn := st.Txn(ctx)
		for k := i; k < i+100 && k < n; k++ {
			j := benchJob(fmt.Sprintf("job-%07d", k), benchQueues[k%len(benchQueues)])
			v1alpha1.SetJobDefaults(j)
			j.CreationTimestamp = now
			j.Status = v1alpha1.JobStatus{Phase: v1alpha1.JobPending, SubmitTime: &submitted}
			txn.Then(c.PutOp(j.Name, j))
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
