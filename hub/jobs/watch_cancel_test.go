// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
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
