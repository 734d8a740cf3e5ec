// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// BenchmarkFleetView is the metrics' cost per scheduling cycle on a fleet
// of 100 clusters of 128 8-GPU nodes (two products), 50 queues and 2,000
// pending jobs: the view built from the cycle's fleet and snapshot.
func BenchmarkFleetView(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fleet{ledger: &ledger.State{Reservations: map[string]store.Item[*ledger.Reservation]{}},
		received: map[string]time.Time{}}
	for c := range 100 {
		name := fmt.Sprintf("c%03d", c)
		inv := inventory.Cluster{Name: name}
		for n := range 128 {
			product := "NVIDIA-H100-80GB-HBM3"
			if n%2 == 1 {
				product = "NVIDIA-A100-SXM4-80GB"
			}
			inv.Nodes = append(inv.Nodes, inventory.Node{Name: fmt.Sprintf("n%03d", n), Product: product,
				GPUs: 8, CapacityGPUs: 8, UsedGPUs: n % 9, Ready: true})
		}
		f.clusters = append(f.clusters, inv)
		f.received[name] = now
		cl := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cl.Status.State = v1alpha1.ClusterReady
		cl.Status.LastHeartbeat = &metav1.Time{Time: now}
		f.registered = append(f.registered, store.Item[*v1alpha1.Cluster]{Name: name, Object: cl})
	}
	var queues []placement.Queue
	for q := range 50 {
		queues = append(queues, placement.Queue{Name: fmt.Sprintf("q%02d", q),
			Quotas: map[string]placement.Quota{"h100": {Nominal: 64}, "a100-80gb": {Nominal: 32}}})
	}
	x := newJobIndex()
	for j := range 2000 {
		job := testjob.New(fmt.Sprintf("j%04d", j)).Queue(queues[j%50].Name).Members(4).GPUs(8).Obj()
		job.Status.Phase = v1alpha1.JobPending
		x.change(job.Name, nil, &store.Item[*cachedJob]{Name: job.Name, Object: newCachedJob(job)})
	}
	x.take(f, nil)
	snap := placement.NewSnapshot(f.clusters, nil)
	b.ReportAllocs()
	for b.Loop() {
		v := viewOf(f, snap, queues, snap.QueueUsage(queues), nil, f.countJobs(), now, nil)
		if len(v.gpus) != 100*2*5 {
			b.Fatalf("%d GPU series, want 1000", len(v.gpus))
		}
	}
}
