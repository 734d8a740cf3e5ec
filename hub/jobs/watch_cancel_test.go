// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// next returns the next event or fails after a timeout.
func next(t *testing.T, ch <-chan jobs.Event) jobs.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return jobs.Event{}
}

func TestWatchResumesAndFilters(t *testing.T) {
	ctx, q := testCtx(t), uniq("w")
	js, _ := services(t, nil, q)
	start, err := js.List(ctx, jobs.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b := uniq("wa"), uniq("wb")
	for _, n := range []string{a, b} {
		if _, _, _, err := js.Submit(ctx, job(n, q), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := js.Cancel(ctx, a); err != nil {
		t.Fatal(err)
	}

	evA := js.Watch(ctx, start.Revision, a)
	added := next(t, evA)
	if added.Type != store.Added || added.Job.Name != a || added.Job.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("first event %+v", added)
	}
	mod := next(t, evA)
	if mod.Type != store.Modified || mod.Job.Status.Phase != v1alpha1.JobCancelled {
		t.Fatalf("second event %+v", mod)
	}

	resumed := js.Watch(ctx, added.Revision, "")
	for {
		ev := next(t, resumed)
		if ev.Job.Name == a && ev.Type == store.Added {
			t.Fatal("resumed watch replayed an event before its revision")
		}
		if ev.Job.Name == a && ev.Type == store.Modified {
			break
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, q := testCtx(t), uniq("c")
	js, qs := services(t, nil, q)
	name := uniq("cx")
	if _, _, _, err := js.Submit(ctx, job(name, q), false); err != nil {
		t.Fatal(err)
	}
	if n, err := js.ActiveJobs(ctx, q); err != nil || n != 1 {
		t.Fatalf("active jobs %d, %v", n, err)
	}
	j, rev, err := js.Cancel(ctx, name)
	if err != nil || j.Status.Phase != v1alpha1.JobCancelled || j.Status.CompletionTime == nil {
		t.Fatalf("cancel: %+v, %v", j, err)
	}
	if _, rev2, err := js.Cancel(ctx, name); err != nil || rev2 != rev {
		t.Errorf("second cancel wrote again (rev %d → %d) or failed: %v", rev, rev2, err)
	}
	done := uniq("done")
	if _, _, _, err := js.Submit(ctx, job(done, q), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := js.UpdateStatus(ctx, done, func(st *v1alpha1.JobStatus) error {
		st.Phase = v1alpha1.JobSucceeded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if j, _, err := js.Cancel(ctx, done); err != nil || j.Status.Phase != v1alpha1.JobSucceeded {
		t.Errorf("cancel of a finished job: %v, %v", j.Status.Phase, err)
	}
	if _, _, err := js.Cancel(ctx, uniq("missing")); err == nil {
		t.Error("cancel of a missing job succeeded")
	}
	if n, _ := js.ActiveJobs(ctx, q); n != 0 {
		t.Errorf("active jobs after cancel: %d", n)
	}
	if err := qs.Delete(ctx, q); err != nil {
		t.Errorf("delete queue without active jobs: %v", err)
	}
}

// TestWatchMarksTheJobsOfABatch: a batch submission's jobs share one
// revision; every event of it but the last says more follow, a watch
// resumed from the revision before the marked event sees the rest, and
// a watch of one job never marks its event.
func TestWatchMarksTheJobsOfABatch(t *testing.T) {
	ctx, q := testCtx(t), uniq("wm")
	js, _ := services(t, nil, q)
	start, err := js.List(ctx, jobs.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]jobs.BatchItem, 5)
	for i := range items {
		items[i].In = job(uniq(fmt.Sprintf("wm%d", i)), q)
	}
	js.SubmitBatchAs(ctx, items, "alice", false)
	rev := items[0].Revision
	for i, it := range items {
		if it.Err != nil || it.Revision != rev {
			t.Fatalf("item %d: %v at revision %d, want one transaction at %d", i, it.Err, it.Revision, rev)
		}
	}
	all := js.Watch(ctx, start.Revision, "")
	var seen []jobs.Event
	for len(seen) < len(items) {
		if ev := next(t, all); ev.Revision == rev {
			seen = append(seen, ev)
		}
	}
	for i, ev := range seen {
		if want := i < len(items)-1; ev.More != want {
			t.Errorf("event %d of %d of the batch: more %v, want %v", i+1, len(items), ev.More, want)
		}
	}
	// Ended after the second: resumed from the revision before, the
	// watch shows the three it missed (and the two it had, again).
	resumed := js.Watch(ctx, seen[1].Revision-1, "")
	got := map[string]bool{}
	for range items {
		ev := next(t, resumed)
		if ev.Revision != rev {
			t.Fatalf("resumed from %d: event at %d", rev-1, ev.Revision)
		}
		got[ev.Job.Name] = true
	}
	for _, it := range items {
		if !got[it.In.Name] {
			t.Errorf("resumed watch missed %s", it.In.Name)
		}
	}
	if ev := next(t, js.Watch(ctx, start.Revision, items[2].In.Name)); ev.Job.Name != items[2].In.Name || ev.More {
		t.Errorf("watch of one job: %s more %v, want %s without more", ev.Job.Name, ev.More, items[2].In.Name)
	}
}
