// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// TestDeposedSchedulerWritesNothing: a cycle guarded by a leadership that
// was lost writes no explanation of a waiting job and no preemption mark
// (bookings are guarded the same way: TestRunElectsOneLeader); the same
// cycles with a held leadership write both.
func TestDeposedSchedulerWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0))
	e.Submit("spot", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PrioritySpot })
	e.Submit("wide", 3, 8) // never fits: explained
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}, scheduler.WithPlacementOptions(placement.WithPreemptAfter(0)))

	old, err := e.Store.Campaign(e.Ctx, scheduler.Election, "old")
	if err != nil {
		t.Fatal(err)
	}
	oldHeld := old.Held()
	if err := old.Resign(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cycle(e.Ctx, &oldHeld); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(e.Job("wide").Status.Conditions, v1alpha1.JobConditionPlaced); c != nil {
		t.Fatalf("a deposed scheduler explained a waiting job: %+v", c)
	}
	if j := e.Job("spot"); j.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("a deposed scheduler booked %s: %s", j.Name, j.Status.Phase)
	}

	cur, err := e.Store.Campaign(e.Ctx, scheduler.Election, "new")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Resign(e.Ctx) }()
	held := cur.Held()
	if res, err := s.Cycle(e.Ctx, &held); err != nil || len(res.Placed) != 1 {
		t.Fatalf("leader's cycle placed %v, %v; want spot", res.Placed, err)
	}
	if c := meta.FindStatusCondition(e.Job("wide").Status.Conditions, v1alpha1.JobConditionPlaced); c == nil {
		t.Fatal("the leader did not explain the waiting job")
	}

	e.Submit("prod", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PriorityProduction })
	if _, err := s.Cycle(e.Ctx, &oldHeld); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(e.Job("spot").Status.Conditions, v1alpha1.JobConditionPreempted); c != nil {
		t.Fatalf("a deposed scheduler marked spot preempted: %+v", c)
	}
	if res, err := s.Cycle(e.Ctx, &held); err != nil || len(res.Preempted) != 1 {
		t.Fatalf("leader's cycle preempted %v, %v; want spot", res.Preempted, err)
	}
}
