// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/hub/scheduler"
)

// TestFinishedJobsCountedFromTheCache: the finished jobs a snapshot leaves
// out still count in shoal_jobs by phase, and a cycle on the caches sees
// the same fleet as one on a fresh list: the same placements and gauges.
func TestFinishedJobsCountedFromTheCache(t *testing.T) {
	for _, cached := range []bool{false, true} {
		name := "fresh"
		if cached {
			name = "cached"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.Cluster("eu1", node("a", "r", 0))
			for _, j := range []string{"done-1", "done-2", "run", "wait"} {
				e.Submit(j, 1, 8)
			}
			for _, j := range []string{"done-1", "done-2"} {
				if _, _, err := e.Jobs.Cancel(e.Ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
			if cached {
				stop, err := s.StartCaches(e.Ctx, func() {})
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
			}
			reg := prometheus.NewRegistry()
			if err := scheduler.Register(reg); err != nil {
				t.Fatal(err)
			}
			res, err := s.Cycle(e.Ctx, nil)
			if err != nil || len(res.Placed) != 1 || res.Placed[0] != "run" || res.Waiting != 1 {
				t.Fatalf("cycle: %+v, %v; want run placed, 1 waiting", res, err)
			}
			if res.Revision == 0 {
				t.Fatal("the cycle's ledger revision is not recorded")
			}
			got := gather(t, reg)
			for k, v := range map[string]float64{`shoal_jobs{phase=Cancelled}`: 2, `shoal_jobs{phase=Pending}`: 1,
				`shoal_jobs{phase=Placed}`: 1, `shoal_jobs{phase=Succeeded}`: 0} {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			// The next cycle (on the caches: after they hold its own
			// booking) conflicts with nothing and places nothing more.
			res, err = s.Cycle(e.Ctx, nil)
			if err != nil || res.Conflict || len(res.Placed) != 0 || res.Waiting != 1 {
				t.Fatalf("second cycle: %+v, %v; want 1 waiting, no conflict", res, err)
			}
		})
	}
}
