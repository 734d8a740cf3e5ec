// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestFairShareSurvivesLeaderChange: research ran a job for an hour under
// one scheduler; a new scheduler (a failover) on the same store still
// knows, so when research and y each want the one free node, y goes first
// although research's job was submitted earlier.
func TestFairShareSurvivesLeaderChange(t *testing.T) {
	e := newEnv(t)
	if _, _, err := queues.New(e.Store, e.Jobs).Create(e.Ctx, testqueue.New("y").Obj()); err != nil {
		t.Fatal(err)
	}
	e.Cluster("eu1", node("a", "r", 0))
	e.Submit("x0", 1, 8)
	old := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	if res, err := old.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
		t.Fatalf("placed %v (%v)", res.Placed, err)
	}
	e.Clock.Step(time.Hour)
	if _, err := old.Cycle(e.Ctx, nil); err != nil { // advances and saves research's usage
		t.Fatal(err)
	}
	if err := ledger.New(e.Store).Release(e.Ctx, "x0", 1); err != nil {
		t.Fatal(err)
	}
	e.Submit("x1", 1, 8)
	e.Submit("y1", 1, 8, func(j *v1alpha1.Job) { j.Spec.Queue = "y" })
	res, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil)
	if err != nil || len(res.Placed) != 1 || res.Placed[0] != "y1" {
		t.Fatalf("new leader placed %v (%v), want [y1]: research's past usage was forgotten", res.Placed, err)
	}
}
