// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// TestCycleBooksPlacementsTogether: a cycle that places 40 gangs books
// them in groups of at most 32 per store transaction (two here: the
// reservations carry two revisions), each counter advanced once per
// booking, and a later cycle books on top of them without a conflict.
func TestCycleBooksPlacementsTogether(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r1", 0), node("b", "r1", 0), node("c", "r2", 0))
	e.Cluster("us1", node("d", "r1", 0), node("e", "r1", 0), node("f", "r1", 0))
	for i := range 40 {
		e.Submit(fmt.Sprintf("j%02d", i), 1, 1)
	}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil || res.Conflict || len(res.Placed) != 40 {
		t.Fatalf("cycle: %d placed, conflict %v, err %v", len(res.Placed), res.Conflict, err)
	}
	l, err := ledger.New(e.Store).Read(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	perCluster := map[string]int64{}
	for _, it := range l.Reservations {
		revs[it.Revision]++
		for _, c := range it.Object.Clusters {
			perCluster[c]++
		}
	}
	if len(revs) != 2 {
		t.Fatalf("40 bookings in %d transactions (%v), want 2", len(revs), revs)
	}
	for c, n := range perCluster {
		v, _, err := ledger.New(e.Store).ClusterVersions().Get(e.Ctx, c)
		if err != nil || v.Bookings != n {
			t.Errorf("cluster %s: counter %+v (%v) after %d bookings", c, v, err, n)
		}
	}
	for i := range 4 {
		e.Submit(fmt.Sprintf("k%d", i), 1, 1)
	}
	if res, err := s.Cycle(e.Ctx, nil); err != nil || res.Conflict || len(res.Placed) != 4 {
		t.Fatalf("next cycle: %v placed, conflict %v, err %v", res.Placed, res.Conflict, err)
	}
	for i := range 4 {
		if p := e.Job(fmt.Sprintf("k%d", i)).Status.Phase; p != v1alpha1.JobPlaced {
			t.Errorf("k%d: phase %s", i, p)
		}
	}
}
