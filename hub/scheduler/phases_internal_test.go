// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestCyclePhasesCounted: a cycle that books one job and leaves another
// waiting adds time to each phase it went through.
func TestCyclePhasesCounted(t *testing.T) {
	e := hubtest.New(t)
	e.Cluster("eu1", inventory.Node{Name: "a", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
	e.Submit("fits", 1, 8)
	e.Submit("waits", 1, 8)
	phases := []string{"wait", "read", "input", "snapshot", "decide", "book", "explain", "preempt", "status"}
	before := map[string]float64{}
	for _, p := range phases {
		before[p] = testutil.ToFloat64(cyclePhases.WithLabelValues(p))
	}
	s := New(e.Store, Config{Clock: e.Clock})
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil || len(res.Placed) != 1 || res.Waiting != 1 {
		t.Fatalf("cycle: %+v, %v; want one placed and one waiting", res, err)
	}
	for _, p := range phases {
		if d := testutil.ToFloat64(cyclePhases.WithLabelValues(p)) - before[p]; d <= 0 {
			t.Errorf("phase %s: %v s added, want some", p, d)
		}
	}
}
