// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestLeaderWritesExplanationsBesideItsCycles: a leader's cycles hand the
// waiting jobs' explanations to its explainer; the explanation is stored,
// the cycles after it do not write it again (the job's revision stays),
// an explained job is booked once capacity comes, and the explainer is
// gone once the term ends. (A cycle that starts while
// a write is in flight is TestExplainerSkipsUntilTheViewHasTheWrite's.)
func TestLeaderWritesExplanationsBesideItsCycles(t *testing.T) {
	e := hubtest.New(t)
	e.Cluster("eu1", inventory.Node{Name: "a", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
	e.Submit("fits", 1, 8)
	e.Submit("waits", 1, 8)
	s := New(e.Store, Config{Clock: e.Clock, Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(e.Ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	okCycles := func() float64 { return testutil.ToFloat64(cycles.WithLabelValues("ok")) }
	deadline := time.Now().Add(30 * time.Second)
	var rv string
	for rv == "" {
		j := e.Job("waits")
		if c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced); c != nil && c.Status == metav1.ConditionFalse {
			rv = j.ResourceVersion
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting job has no explanation after 30 s")
		}
		e.Clock.Step(10 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	for start := okCycles(); okCycles() < start+20; {
		if time.Now().After(deadline) {
			t.Fatal("20 more cycles did not run within 30 s")
		}
		e.Clock.Step(10 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	if j := e.Job("waits"); j.ResourceVersion != rv {
		t.Errorf("the waiting job was written again by later cycles: revision %s, then %s", rv, j.ResourceVersion)
	}
	// Capacity comes: the explained job is booked.
	e.Cluster("eu2", inventory.Node{Name: "b", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
	for e.Job("waits").Status.Phase != v1alpha1.JobPlaced {
		if time.Now().After(deadline) {
			t.Fatalf("the explained job is %s once capacity came", e.Job("waits").Status.Phase)
		}
		e.Clock.Step(10 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.explainer != nil {
		t.Error("the explainer outlived the term")
	}
}

// TestExplainerSkipsUntilTheViewHasTheWrite: a job is skipped while its
// explanation is in flight and while a cycle's view predates the write,
// then explained again by a view that has it; a dropped write (revision
// 0) is forgotten at once.
func TestExplainerSkipsUntilTheViewHasTheWrite(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newExplainer(ctx)
	release := make(chan struct{})
	wrote := make(chan struct{})
	item := func(name string) explainItem {
		var it explainItem
		it.job.Name = name
		return it
	}
	e.start([][]explainItem{{item("a"), item("b")}}, func(context.Context, []explainItem) (int64, error) {
		<-release
		return 40, nil
	})
	e.start([][]explainItem{{item("c")}}, func(context.Context, []explainItem) (int64, error) {
		defer close(wrote)
		return 0, nil // dropped: a job changed
	})
	<-wrote
	for !func() bool { e.mu.Lock(); defer e.mu.Unlock(); _, ok := e.jobs["c"]; return !ok }() {
		time.Sleep(time.Millisecond)
	}
	// As a cycle does: prune with its view's revision, then skip.
	skip := func(job string, seen int64) bool { e.prune(seen); return e.skip(job) }
	for _, name := range []string{"a", "b"} {
		if !skip(name, 100) {
			t.Errorf("%s: not skipped while its write is in flight", name)
		}
	}
	if skip("c", 1) {
		t.Error("c: skipped after its write was dropped")
	}
	close(release)
	e.wait()
	if !skip("a", 39) {
		t.Error("a: not skipped by a view at 39, before the write at 40")
	}
	if skip("a", 40) || skip("a", 39) {
		t.Error("a: still skipped once a view had the write")
	}
	if len(e.jobs) != 0 { // b, never asked about again, went with a's prune
		t.Errorf("the explainer still holds %v after a view at 40", e.jobs)
	}
}
