// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// deadline sets the pod template's activeDeadlineSeconds, the time limit
// the kubelet runs every member under.
func deadline(seconds int64) func(*v1alpha1.Job) {
	return func(j *v1alpha1.Job) { j.Spec.Template.Spec.ActiveDeadlineSeconds = &seconds }
}

// A job's time limit reaches the engine through the hub: a small gang
// backfills a node held for a bigger gang only when its limit ends before
// the gang on the other held node does, and never without one.
func TestBackfillByTimeLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		limit  int64 // the small job's activeDeadlineSeconds; 0 for none
		placed bool
	}{
		"ends before the held node drains":            {limit: 3600, placed: true},
		"would still run when the big gang needs it":  {limit: 3 * 3600},
		"no time limit never backfills a held domain": {},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
			s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
			// run holds one of the two nodes of rack r for at most 2 h.
			e.Submit("run", 1, 8, deadline(2*3600))
			if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
				t.Fatalf("run: placed %v, err %v", res.Placed, err)
			}
			// big needs the whole rack: it waits and holds it.
			e.Submit("big", 2, 8, rack)
			small := []func(*v1alpha1.Job){}
			if tc.limit > 0 {
				small = append(small, deadline(tc.limit))
			}
			e.Submit("small", 1, 8, small...)
			res, err := s.Cycle(e.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			placed := map[string]bool{}
			for _, p := range res.Placed {
				placed[p] = true
			}
			if placed["big"] {
				t.Fatalf("big placed with one node busy: %v", res.Placed)
			}
			if placed["small"] != tc.placed {
				t.Fatalf("small placed = %v, want %v (placed %v)", placed["small"], tc.placed, res.Placed)
			}
		})
	}
}

// GangOf passes the template's time limit as the gang's estimate.
func TestGangOfTimeLimit(t *testing.T) {
	j := &v1alpha1.Job{}
	deadline(90)(j)
	if g := scheduler.GangOf(j); g.Estimate.Seconds() != 90 {
		t.Fatalf("estimate %s, want 90s", g.Estimate)
	}
	if g := scheduler.GangOf(&v1alpha1.Job{}); g.Estimate != 0 {
		t.Fatalf("estimate %s without a time limit, want 0", g.Estimate)
	}
}
