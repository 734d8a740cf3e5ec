// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// BenchmarkFilteredList100k measures filtered Lists of 100k stored jobs
// (benchJob, 16 owners, 1 in 100 Running on one of 10 clusters), scanning
// the store (scan) and from the list index (index): a page of 500 of a
// queue (a quarter match), of an owner (1 in 16), of a cluster (100 jobs
// match), and a phase that matches nothing.
func BenchmarkFilteredList100k(b *testing.B) {
	if testing.Short() {
		b.Skip("stores 100k jobs")
	}
	total := 100_000
	if n, err := strconv.Atoi(os.Getenv("SHOAL_BENCH_JOBS")); err == nil && n > 0 {
		total = n // a smaller store to profile with
	}
	st, js := openBench(b, true)
	seedOwned(b, st, total)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	ix := jobs.NewListIndex(st)
	go func() { _ = ix.Run(ctx) }()
	indexed := jobs.New(st, jobs.WithListIndex(ix))
	for ix.Fresh(ctx) != nil { // each try waits up to 2 s; the first list of 100k takes longer
		if ctx.Err() != nil {
			b.Fatal(ctx.Err())
		}
	}
	if h1 := heap(); h1 > h0 {
		b.Logf("the index of %d jobs holds %.1f MB of heap (%d bytes a job)", total, float64(h1-h0)/1e6, (h1-h0)/uint64(total))
	}
	cases := []struct {
		name string
		opts jobs.ListOptions
		want int
	}{
		{"queue-page500", jobs.ListOptions{Limit: 500, Queue: benchQueues[1]}, 500},
		{"owner-page500", jobs.ListOptions{Limit: 500, Owner: "user-03"}, 500},
		{"cluster", jobs.ListOptions{Limit: 500, Cluster: "cluster-07"}, total / 1000},
		{"no-match", jobs.ListOptions{Limit: 500, Phase: v1alpha1.JobFailed}, 0},
	}
	for _, mode := range []struct {
		name string
		js   *jobs.Service
	}{{"scan", js}, {"index", indexed}} {
		for _, bc := range cases {
			b.Run(mode.name+"/"+bc.name, func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					res, err := mode.js.List(ctx, bc.opts)
					if err != nil || len(res.Items) != bc.want {
						b.Fatalf("%d items, %v", len(res.Items), err)
					}
				}
				// The CPU the process spent (the embedded etcd's too), the
				// figure that holds on a loaded machine where ns/op does not.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedOwned stores n jobs like seed, each with an owner of 16, and every
// 100th Running on one of 10 clusters.
func seedOwned(b *testing.B, st *store.Store, n int) {
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
			j.Status = v1alpha1.JobStatus{Phase: v1alpha1.JobPending, SubmitTime: &submitted, Owner: fmt.Sprintf("user-%02d", k%16)}
			if k%100 == 0 {
				cl := fmt.Sprintf("cluster-%02d", k/100%10)
				j.Status.Phase = v1alpha1.JobRunning
				j.Status.Placement = &v1alpha1.PlacementStatus{Clusters: []string{cl}}
			}
			txn.Then(c.PutOp(j.Name, j))
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
