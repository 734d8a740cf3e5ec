// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
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

// TestSlowCycleLogsItsPhases: a cycle that took slowCycle or more is
// logged with its phases and what it did; a faster one is not.
func TestSlowCycleLogsItsPhases(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	c := newPhaseClock()
	c.done("read")
	c.done("decide")
	c.logSlow(logger, Result{Placed: []string{"a"}}, 3, 2, 1)
	if len(lines) != 0 {
		t.Fatalf("a fast cycle logged %q", lines)
	}
	c.start = c.start.Add(-slowCycle)
	c.logSlow(logger, Result{Placed: []string{"a"}, Waiting: 2}, 3, 2, 1)
	if len(lines) != 1 {
		t.Fatalf("a slow cycle logged %d lines, want 1", len(lines))
	}
	for _, want := range []string{`"msg"="slow scheduling cycle"`, `"pending"=3`, `"reservations"=2`, `"placed"=1`,
		`"waiting"=2`, `"explained"=1`, `"read"=`, `"decide"=`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log %q lacks %s", lines[0], want)
		}
	}
}
