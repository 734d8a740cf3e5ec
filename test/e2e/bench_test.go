// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// BenchmarkGangStart measures submit → every member Running for gangs of
// 8 (one cluster), 64 and 256 members (both across two clusters), and
// reports p50 and p99 over the iterations.
//
//	go test ./test/e2e -run '^$' -bench GangStart -benchtime 10x
func BenchmarkGangStart(b *testing.B) {
	if testing.Short() {
		b.Skip("end to end on a local fleet")
	}
	for _, tc := range []struct {
		members, gpus, clusters int32
	}{{8, 8, 1}, {64, 4, 2}, {256, 1, 2}} {
		b.Run(fmt.Sprintf("members=%d", tc.members), func(b *testing.B) {
			var ds []time.Duration
			i := 0
			for b.Loop() {
				name := fmt.Sprintf("bench-%d-%d", tc.members, i)
				i++
				j := newJob(name, "bench", tc.members, tc.gpus, func(j *v1alpha1.Job) {
					j.Spec.Placement.MaxClusters = tc.clusters
				})
				d, err := startGang(b.Context(), j)
				if err != nil {
					b.Fatal(err, "\n", describeMembers(b.Context(), name))
				}
				ds = append(ds, d)
				if d > 5*time.Second { // an outlier: say what the job went through
					if j, _, err := h.jobs.Get(b.Context(), name); err == nil {
						b.Logf("%s took %s: restarts %d, conditions %+v", name, d, j.Status.Restarts, j.Status.Conditions)
					}
				}
				b.StopTimer()
				if err := cancelGone(b.Context(), name); err != nil {
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

// startGang submits j and returns the time until the job is Running.
func startGang(ctx context.Context, j *v1alpha1.Job) (time.Duration, error) {
	return startGangSeen(ctx, j, nil)
}

// startGangSeen is startGang calling seen (when not nil) with every
// version of the job until it runs. It follows the job by a watch: polling
// it every few milliseconds, as it did, read and decoded the whole job
// from the hub's store a hundred times a second, on the cores the fleet
// under measure shares.
func startGangSeen(ctx context.Context, j *v1alpha1.Job, seen func(*v1alpha1.Job)) (time.Duration, error) {
	if _, _, err := h.queues.Create(ctx, &v1alpha1.Queue{ObjectMeta: objectMeta(j.Spec.Queue)}); err != nil && !isAlreadyExists(err) {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, rev, _, err := h.jobs.Submit(ctx, j, false)
	if err != nil {
		return 0, err
	}
	var cur *v1alpha1.Job
	for ev := range h.jobs.Watch(ctx, rev-1, j.Name) { // the submitted version first
		if ev.Err != nil {
			return time.Since(start), ev.Err
		}
		if ev.Job == nil {
			continue
		}
		cur = ev.Job
		if seen != nil {
			seen(cur)
		}
		if cur.Status.Phase == v1alpha1.JobRunning {
			return time.Since(start), nil
		}
	}
	err = fmt.Errorf("job %s not running: %w", j.Name, ctx.Err())
	if cur != nil {
		err = fmt.Errorf("%w: job %s %s, conditions %v", err, j.Name, cur.Status.Phase, cur.Status.Conditions)
	}
	return time.Since(start), err
}

// cancelGone cancels a job and waits until nothing of it is left and its
// GPUs are free again in the inventory.
func cancelGone(ctx context.Context, name string) error {
	if _, _, err := h.jobs.Cancel(ctx, name); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, name)
		if err != nil || len(hp) > 0 {
			return false, nil
		}
		lp, err := localPods(ctx, name)
		if err != nil || len(lp) > 0 {
			return false, nil
		}
		invs, err := h.reg.Inventories(ctx)
		if err != nil {
			return false, nil
		}
		for _, inv := range invs {
			if inv.FreeGPUs() != 128 {
				return false, nil
			}
		}
		return true, nil
	})
}

// describeMembers says where job's members are: its hub pods by phase and
// commit stamp, its local pods by gate, node and phase, and the first few
// that are not running on either side.
func describeMembers(ctx context.Context, job string) string {
	var b strings.Builder
	hp, err := hubPods(ctx, job)
	if err != nil {
		return err.Error()
	}
	kinds := map[string]int{}
	var stuck []string
	for _, p := range hp {
		k := fmt.Sprintf("hub %s commit=%q", p.Status.Phase, p.Annotations[v1alpha1.AnnotationCommit])
		kinds[k]++
		if p.Status.Phase != corev1.PodRunning && len(stuck) < 5 {
			stuck = append(stuck, fmt.Sprintf("hub %s/%s: %s", p.Namespace, p.Name, statusKind(&p.Status)))
		}
	}
	lp, err := localPods(ctx, job)
	if err != nil {
		return err.Error()
	}
	for c, pods := range lp {
		for _, p := range pods {
			kinds[fmt.Sprintf("%s gated=%v bound=%v %s", c, len(p.Spec.SchedulingGates) > 0, p.Spec.NodeName != "", p.Status.Phase)]++
			if p.Status.Phase != corev1.PodRunning && len(stuck) < 10 {
				stuck = append(stuck, fmt.Sprintf("%s %s: gates %v node %q %s", c, p.Name, p.Spec.SchedulingGates, p.Spec.NodeName,
					statusKind(&p.Status)))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(&b, "%5d %s\n", kinds[k], k)
	}
	b.WriteString(strings.Join(stuck, "\n"))
	return b.String()
}
