// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/framework"
)

// BenchmarkGangStartDRA measures submit → job Running for a 64-member gang
// of one GPU each (the whole cluster) on the DRA-only cluster and on the
// extended-resource cluster of the same nodes, in one run, and reports p50
// and p99 of each: the cost of DRA in gang start time (the member cluster's
// kube-scheduler allocates a ResourceClaim per member).
//
//	go test ./test/e2e/dra -run '^$' -bench GangStartDRA -benchtime 5x
func BenchmarkGangStartDRA(b *testing.B) {
	if testing.Short() {
		b.Skip("end to end on a local fleet")
	}
	conn := framework.DialHub(b, fl.Shoal.Config, devfleet.ShoalContext)
	jobs, clusters := shoalv1.NewJobsClient(conn), shoalv1.NewClustersClient(conn)
	if out, err := shoalCLI("", "queue", "create", "bench"); err != nil && !strings.Contains(out, "already exists") {
		b.Fatalf("queue: %v\n%s", err, out)
	}
	for _, profile := range []string{profileDRA, profileExtended} {
		b.Run("profile="+profile, func(b *testing.B) {
			var ds []time.Duration
			i := 0
			for b.Loop() {
				name := fmt.Sprintf("bench-%s-%d", profile, i)
				i++
				j := testjob.New(name).Queue("bench").Members(nodes * 8).GPUs(1).With(func(j *v1alpha1.Job) {
					j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"profile": profile}}
				}).Obj()
				d, err := startGang(b.Context(), jobs, j)
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, d)
				if d > 15*time.Second { // an outlier: say what the job went through
					if j, err := getJob(b.Context(), jobs, name); err == nil {
						b.Logf("%s took %s: restarts %d, conditions %+v", name, d, j.Status.Restarts, j.Status.Conditions)
					}
				}
				b.StopTimer()
				if err := cancelGone(b.Context(), jobs, clusters, name); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(pct(ds, 0.50).Seconds(), "p50-s")
			b.ReportMetric(pct(ds, 0.99).Seconds(), "p99-s")
		})
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func getJob(ctx context.Context, jobs shoalv1.JobsClient, name string) (*v1alpha1.Job, error) {
	obj, err := jobs.Get(ctx, &shoalv1.GetJobRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var j v1alpha1.Job
	return &j, json.Unmarshal(obj.Json, &j)
}

// startGang submits j and returns the time until it is Running.
func startGang(ctx context.Context, jobs shoalv1.JobsClient, j *v1alpha1.Job) (time.Duration, error) {
	raw, err := json.Marshal(j)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: raw}}); err != nil {
		return 0, err
	}
	var cur *v1alpha1.Job
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		cur, err = getJob(ctx, jobs, j.Name)
		return err == nil && cur.Status.Phase == v1alpha1.JobRunning, nil
	})
	if err != nil {
		return 0, fmt.Errorf("job %s not Running: %w (status %+v)", j.Name, err, cur)
	}
	return time.Since(start), nil
}

// cancelGone cancels the job and waits until it is Cancelled and every
// cluster's inventory has all its GPUs free again.
func cancelGone(ctx context.Context, jobs shoalv1.JobsClient, clusters shoalv1.ClustersClient, name string) error {
	if _, err := jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: name}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := getJob(ctx, jobs, name)
		if err != nil || j.Status.Phase != v1alpha1.JobCancelled {
			return false, nil
		}
		for _, w := range fl.Workloads() {
			obj, err := clusters.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: w.Name})
			if err != nil {
				return false, nil
			}
			var inv fedinv.Cluster
			if err := json.Unmarshal(obj.Json, &inv); err != nil || inv.FreeGPUs() != nodes*8 {
				return false, nil
			}
		}
		return true, nil
	})
}
