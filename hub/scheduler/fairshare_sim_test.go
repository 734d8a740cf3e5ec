// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// fairRun is one simulated run: the jobs placed at each step, and the GPU
// minutes each queue ran.
type fairRun struct {
	steps   [][]string
	gpuMins map[string]int
}

// simQueues are the simulation's queues and their weights.
var simQueues = []struct {
	name   string
	weight int32
}{{"research", 1}, {"y", 1}, {"z", 2}}

// simulateFairShare runs the real scheduler on an embedded etcd store with
// a fake clock: three queues (weights 1, 1, 2) of 1×8-GPU jobs of 20 min
// each on four 8-GPU nodes, research alone for the first hour, then 40 jobs
// in each queue; every 5 min the finished ones release their GPUs and a
// cycle places the next. With changeEvery > 0 a
// new scheduler (a new leader, restoring the stored usage) takes over every
// changeEvery steps; forgetUsage and forgetHolds delete the stored usage
// or head-of-queue reservations first, as if they had not been kept.
func simulateFairShare(t *testing.T, steps, changeEvery int, forgetUsage, forgetHolds bool) fairRun {
	e := newEnv(t)
	qs := queues.New(e.Store, e.Jobs)
	for _, q := range simQueues[1:] {
		if _, _, err := qs.Create(e.Ctx, testqueue.New(q.name).Weight(q.weight).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0))
	submit := func(q string) {
		for i := range 40 {
			e.Submit(fmt.Sprintf("%s-%02d", q, i), 1, 8, func(j *v1alpha1.Job) { j.Spec.Queue = q })
		}
	}
	submit("research") // alone for the first hour: its usage is history the others lack
	cfg := scheduler.Config{Clock: e.Clock}
	s := scheduler.New(e.Store, cfg)
	led := ledger.New(e.Store)
	started := map[string]time.Time{}
	run := fairRun{gpuMins: map[string]int{}}
	for step := range steps {
		if step == 12 {
			submit("y")
			submit("z")
		}
		if changeEvery > 0 && step > 0 && step%changeEvery == 0 {
			if forgetUsage {
				deleteRecord(t, e.Ctx, store.NewCollection(e.Store, scheduler.KindFairShare, store.JSONCodec[*placement.FairShareState]()), scheduler.FairShareRecord)
			}
			if forgetHolds {
				deleteRecord(t, e.Ctx, store.NewCollection(e.Store, scheduler.KindHolds, store.JSONCodec[*json.RawMessage]()), scheduler.HoldsRecord)
			}
			s = scheduler.New(e.Store, cfg)
		}
		for name, at := range started {
			if e.Clock.Since(at) >= 20*time.Minute {
				if err := led.Release(e.Ctx, name, 1); err != nil {
					t.Fatal(err)
				}
				delete(started, name)
			}
		}
		res, err := s.Cycle(e.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		placed := slices.Clone(res.Placed)
		run.steps = append(run.steps, placed)
		for _, p := range placed {
			started[p] = e.Clock.Now()
		}
		for name := range started {
			q, _, _ := strings.Cut(name, "-")
			run.gpuMins[q] += 8 * 5
		}
		e.Clock.Step(5 * time.Minute)
	}
	return run
}

// deleteRecord deletes record name of collection c, if it exists.
func deleteRecord[T any](t *testing.T, ctx context.Context, c *store.Collection[T], name string) {
	t.Helper()
	_, rev, err := c.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, name, rev); err != nil {
		t.Fatal(err)
	}
}

// diverge counts the steps at which two runs placed different jobs.
func diverge(a, b fairRun) (n int, first int) {
	first = -1
	for i := range a.steps {
		if !slices.Equal(a.steps[i], b.steps[i]) {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// shares formats each queue's part of the GPU minutes.
func shares(r fairRun) string {
	total := 0
	for _, v := range r.gpuMins {
		total += v
	}
	var out []string
	for _, q := range simQueues {
		out = append(out, fmt.Sprintf("%s(w%d) %.1f%%", q.name, q.weight, 100*float64(r.gpuMins[q.name])/float64(total)))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TestFairShareOrderAcrossLeaderChangesSimulated is a simulator run, not a
// timed test (fake clock): 60 steps of 5 min (5 h) under one leader, and
// under a new leader every 35 min that restores what the last one stored
// (the fair-share usage and the head-of-queue reservations), or that forgot
// one of them. Restoring both, the placements are those of one leader at
// every step: the fair-share order survives a leader change. The
// forgetting runs must differ, or the simulation could not tell.
func TestFairShareOrderAcrossLeaderChangesSimulated(t *testing.T) {
	const steps, every = 60, 7
	one := simulateFairShare(t, steps, 0, false, false)
	kept := simulateFairShare(t, steps, every, false, false)
	noUsage := simulateFairShare(t, steps, every, true, false)
	noHolds := simulateFairShare(t, steps, every, false, true)
	t.Logf("one leader: %s", shares(one))
	for _, r := range []struct {
		what string
		run  fairRun
	}{
		{"usage and head-of-queue reservations restored (as deployed)", kept},
		{"usage forgotten", noUsage},
		{"head-of-queue reservations forgotten", noHolds},
	} {
		n, first := diverge(one, r.run)
		t.Logf("new leader every %d steps, %s: %d of %d steps differ (first %d); %s", every, r.what, n, steps, first, shares(r.run))
	}
	if n, first := diverge(one, kept); n != 0 {
		t.Errorf("with the usage and reservations restored, %d of %d steps placed other jobs than under one leader (first at step %d: %v, want %v)",
			n, steps, first, kept.steps[first], one.steps[first])
	}
	if n, _ := diverge(one, noUsage); n == 0 {
		t.Error("forgetting the usage changed no placement: the simulation cannot tell whether the usage survives")
	}
}
