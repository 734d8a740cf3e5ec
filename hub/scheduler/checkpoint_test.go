// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// TestPreemptionChoosesByReportedCheckpoints: of two running spot gangs,
// the scheduler preempts the one whose reported checkpoint leaves it the
// least work to lose — the one started later would lose less without
// checkpoints, so the choice comes from status.checkpoint.
func TestPreemptionChoosesByReportedCheckpoints(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	spot := func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PrioritySpot }
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}, scheduler.WithPlacementOptions(placement.WithPreemptAfter(0)))
	e.Submit("old", 1, 8, spot)
	if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
		t.Fatalf("old not placed: %+v %v", res, err)
	}
	e.Clock.Step(2 * time.Hour)
	e.Submit("young", 1, 8, spot)
	if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
		t.Fatalf("young not placed: %+v %v", res, err)
	}
	e.Clock.Step(30 * time.Minute)
	// old checkpointed a minute ago: it loses a minute and the grace;
	// young, never checkpointed, loses its 30 minutes.
	js := jobs.New(e.Store, jobs.WithClock(e.Clock))
	r := v1alpha1.CheckpointReport{Step: 900, URI: "s3://ckpt/old/900", Time: e.Clock.Now().Add(-time.Minute)}
	if _, _, err := js.ReportCheckpoint(e.Ctx, "old", r, "test"); err != nil {
		t.Fatal(err)
	}
	e.Submit("prod", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PriorityProduction })
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil || len(res.Preempted) != 1 || res.Preempted[0] != "old" {
		t.Fatalf("preempted %v (%v), want old: its checkpoint makes it the cheaper victim", res.Preempted, err)
	}
}
