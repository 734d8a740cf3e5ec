// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/shoal-dev/shoal/internal/cputime"

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

// TestSlowCycleLogsItsPhases: a cycle that took Config.SlowCycle or more is
// logged with its phases and what it did; a faster one is not.
func TestSlowCycleLogsItsPhases(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	c := newPhaseClock(false, DefaultSlowCycle)
	c.doneWaiting("read", 0, []any{"wait.jobs", int64(5)})
	c.done("decide")
	c.end(logger, Result{Placed: []string{"a"}, explained: 1}, 3, 2)
	if len(lines) != 0 {
		t.Fatalf("a fast cycle logged %q", lines)
	}
	c.start = c.start.Add(-DefaultSlowCycle)
	c.end(logger, Result{Placed: []string{"a"}, Waiting: 2, explained: 1}, 3, 2)
	if len(lines) != 1 {
		t.Fatalf("a slow cycle logged %d lines, want 1", len(lines))
	}
	for _, want := range []string{`"msg"="slow scheduling cycle"`, `"pending"=3`, `"reservations"=2`, `"placed"=1`,
		`"waiting"=2`, `"explained"=1`, `"read"=`, `"decide"=`, `"wait.jobs"=5`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log %q lacks %s", lines[0], want)
		}
	}
	// A lower threshold (--scheduler-slow-cycle) logs a cycle the default
	// does not.
	c = newPhaseClock(false, 100*time.Millisecond)
	c.done("decide")
	c.start = c.start.Add(-150 * time.Millisecond)
	c.end(logger, Result{}, 0, 0)
	if len(lines) != 2 {
		t.Fatalf("a 150 ms cycle under a 100 ms threshold logged %d lines in all, want 2", len(lines))
	}
	lines = lines[:1]
	if strings.Contains(lines[0], "cpu") {
		t.Errorf("a cycle on no locked thread logged a CPU time: %q", lines[0])
	}
	if _, ok := cputime.Thread(); !ok {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c = newPhaseClock(true, DefaultSlowCycle)
	c.done("read")
	c.doneWaiting("input", 0, nil)
	c.start = c.start.Add(-DefaultSlowCycle)
	c.end(logger, Result{}, 0, 0)
	for _, want := range []string{`"cpuMs"=`, `"cpu.read"=`, `"cpu.input"=`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("log of a cycle on a locked thread %q lacks %s", lines[1], want)
		}
	}
}

// TestLeaderCyclesCountTheirCPU: a leader's cycles run on a locked
// thread and add their CPU time to shoal_scheduler_cycle_cpu_seconds,
// never more than the time they ran in.
func TestLeaderCyclesCountTheirCPU(t *testing.T) {
	if _, ok := cputime.Thread(); !ok {
		t.Skip("no thread CPU clock on this platform")
	}
	e := hubtest.New(t)
	e.Cluster("eu1", inventory.Node{Name: "a", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
	e.Submit("fits", 1, 8)
	cpu0 := histogramOf(t, cycleCPU)
	began := time.Now()
	s := New(e.Store, Config{Clock: e.Clock, Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for histogramOf(t, cycleCPU).GetSampleCount() == cpu0.GetSampleCount() {
		if time.Now().After(deadline) {
			t.Fatal("no leader cycle counted its CPU within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ran := time.Since(began).Seconds()
	if dc := histogramOf(t, cycleCPU).GetSampleSum() - cpu0.GetSampleSum(); dc <= 0 || dc > ran {
		t.Errorf("the cycles' CPU added %v s in %v s; want some, at most that time", dc, ran)
	}
}

// histogramOf is h's state now.
func histogramOf(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
