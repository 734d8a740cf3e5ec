// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestHeartbeatAgeReadsTheLease: the heartbeat-age gauge counts from the
// newer of the cluster record's heartbeat and its lease's (a heartbeat
// renews the lease and rewrites the record only now and then), and from
// the record's when there is no lease.
func TestHeartbeatAgeReadsTheLease(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fleet{ledger: &ledger.State{Reservations: map[string]store.Item[*ledger.Reservation]{}},
		received: map[string]time.Time{},
		leases:   map[string]*registry.Lease{"leased": {Heartbeat: metav1.NewTime(now.Add(-5 * time.Second))}}}
	for _, name := range []string{"leased", "unleased"} {
		cl := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cl.Status.State = v1alpha1.ClusterReady
		cl.Status.LastHeartbeat = &metav1.Time{Time: now.Add(-25 * time.Second)}
		f.registered = append(f.registered, store.Item[*v1alpha1.Cluster]{Name: name, Object: cl})
	}
	snap := placement.NewSnapshot(nil, nil)
	v := viewOf(f, snap, nil, nil, nil, f.countJobs(), now, nil)
	if got := v.clusters["leased"].heartbeatAge; got != 5 {
		t.Errorf("leased cluster: heartbeat age %v s, want 5 (the lease's)", got)
	}
	if got := v.clusters["unleased"].heartbeatAge; got != 25 {
		t.Errorf("cluster without a lease: heartbeat age %v s, want 25 (the record's)", got)
	}
}
