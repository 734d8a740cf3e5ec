// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestRunningGangIsNotCountedTwice: once a committed gang runs and the
// inventory holds its members (Cluster.Gangs), its GPUs are in the
// inventory's used count and must not be subtracted again; before that
// they must be, even from a report received after the commit: one built
// before the members were bound shows their GPUs free, and counting the
// gang from it booked another gang onto them. An agent that does not
// count gangs (Gangs nil) has the gang counted from its first report
// after the commit, as before.
func TestRunningGangIsNotCountedTwice(t *testing.T) {
	for name, tc := range map[string]struct {
		reportAfterCommit bool
		used              int
		gangs             map[string]int32
		second            int32 // GPUs of the second gang's one member
		wantPlaced        bool
	}{
		"report after the commit includes the gang": {reportAfterCommit: true, used: 4, second: 4, wantPlaced: true},
		"no report since the commit: subtract it":   {reportAfterCommit: false, used: 4, second: 4, wantPlaced: false},
		"the inventory holds the gang's members": {reportAfterCommit: true, used: 4, second: 4, wantPlaced: true,
			gangs: map[string]int32{inventory.GangKey("first", 1): 1}},
		"a report after the commit built before the bind: subtract it": {reportAfterCommit: true, used: 0, second: 8,
			wantPlaced: false, gangs: map[string]int32{}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.Cluster("eu1", node("a", "r", 0))
			e.Submit("first", 1, 4)
			s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
			if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
				t.Fatalf("first not placed: %+v %v", res, err)
			}
			// The dispatcher commits, every member runs.
			e.Clock.Step(time.Second)
			commit := metav1.NewTime(e.Clock.Now())
			status := jobs.NewStatus(e.Store)
			j, rev, err := e.Jobs.Get(e.Ctx, "first")
			if err != nil {
				t.Fatal(err)
			}
			it, err := status.Apply(e.Ctx, store.Item[*v1alpha1.Job]{Name: "first", Object: j, Revision: rev},
				jobs.Decide(jobs.Decision{Dispatch: v1alpha1.DispatchStatus{Epoch: 1, Phase: v1alpha1.DispatchCommitted, Time: &commit}}))
			if err == nil {
				running := []v1alpha1.MemberStatus{{Index: 0, Cluster: "eu1", Node: "a", Phase: v1alpha1.MemberRunning}}
				_, err = status.Apply(e.Ctx, it, jobs.Aggregate(running, 1, commit.Time))
			}
			if err != nil {
				t.Fatal(err)
			}
			if j := e.Job("first"); j.Status.Phase != v1alpha1.JobRunning ||
				!meta.IsStatusConditionTrue(j.Status.Conditions, v1alpha1.JobConditionDispatched) {
				t.Fatalf("first not committed and running: %+v", j.Status)
			}
			e.Clock.Step(time.Second)
			if err := ledger.New(e.Store).MarkStarted(e.Ctx, "first", 1, e.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			// The agent's report: the gang's 4 GPUs are used on node a.
			received := e.Clock.Now()
			if !tc.reportAfterCommit {
				received = commit.Add(-time.Second)
			}
			report(t, e, "eu1", received, tc.gangs, node("a", "r", tc.used))
			e.Submit("second", 1, tc.second)
			res, err := s.Cycle(e.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if placed := len(res.Placed) == 1; placed != tc.wantPlaced {
				t.Fatalf("second placed %v, want %v", res.Placed, tc.wantPlaced)
			}
		})
	}
}

// report replaces a cluster's inventory report (gangs: its Gangs).
func report(t *testing.T, e *env, cluster string, received time.Time, gangs map[string]int32, nodes ...inventory.Node) {
	t.Helper()
	invs := store.NewCollection(e.Store, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	b, err := json.Marshal(inventory.Cluster{Name: cluster, Nodes: nodes, Gangs: gangs})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = invs.GuaranteedUpdate(e.Ctx, cluster, func(r *registry.InventoryRecord) (*registry.InventoryRecord, error) {
		r.Inventory, r.Received, r.Generation = b, received, r.Generation+1
		return r, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
