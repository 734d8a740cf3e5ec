// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

func TestDeleteRefusesUnfinishedJobs(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qd")
	js, _ := services(t, nil, q)
	name := uniq("d")
	if _, _, _, err := js.Submit(ctx, job(name, q), false); err != nil {
		t.Fatal(err)
	}
	_, _, err := js.Delete(ctx, name)
	var pe *errs.PreconditionError
	if !errors.As(err, &pe) || !errors.Is(err, errs.ErrFailedPrecondition) {
		t.Fatalf("delete of a pending job: %v, want a precondition error", err)
	}
	if _, _, err := js.Get(ctx, name); err != nil {
		t.Fatalf("refused delete removed the job: %v", err)
	}
	if _, _, err := js.Cancel(ctx, name); err != nil {
		t.Fatal(err)
	}
	last, _, err := js.Delete(ctx, name)
	if err != nil || last.Status.Phase != v1alpha1.JobCancelled {
		t.Fatalf("delete of a cancelled job: %v %v", last, err)
	}
	if _, _, err := js.Get(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted job still there: %v", err)
	}
	if _, _, err := js.Delete(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want not found", err)
	}
}

// finish marks a job finished at t in phase p.
func finish(t *testing.T, js *jobs.Service, name string, p v1alpha1.JobPhase, at time.Time) {
	t.Helper()
	_, _, err := js.UpdateStatus(testCtx(t), name, func(st *v1alpha1.JobStatus) error {
		st.Phase, st.CompletionTime = p, &metav1.Time{Time: at}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRetentionDeletesExpiredFinishedJobs(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qr")
	ix := runIndex(t)
	js, _ := services(t, []jobs.Option{jobs.WithListIndex(ix)}, q)
	t0 := time.Now().Truncate(time.Second)
	mk := func(ttl *int32) string {
		name := uniq("r")
		j := job(name, q)
		j.Spec.TTLSecondsAfterFinished = ttl
		if _, _, _, err := js.Submit(ctx, j, false); err != nil {
			t.Fatal(err)
		}
		return name
	}
	running := mk(ptr.To[int32](0))
	quick := mk(ptr.To[int32](10)) // own TTL, shorter than the default
	dflt := mk(nil)                // the default TTL, an hour
	failed := mk(nil)
	finish(t, js, quick, v1alpha1.JobSucceeded, t0)
	finish(t, js, dflt, v1alpha1.JobSucceeded, t0)
	finish(t, js, failed, v1alpha1.JobFailed, t0.Add(time.Minute))
	_, _, err := js.UpdateStatus(ctx, running, func(st *v1alpha1.JobStatus) error {
		st.Phase = v1alpha1.JobRunning
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0.Add(5 * time.Second))
	r := jobs.NewRetention(js, ix, jobs.RetentionConfig{TTL: time.Hour, Clock: clk})
	exists := func(name string) bool {
		_, _, err := js.Get(ctx, name)
		return err == nil
	}
	sweep := func(at time.Time) {
		t.Helper()
		clk.SetTime(at)
		if _, err := r.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sweep(t0.Add(5 * time.Second))
	if !exists(quick) || !exists(dflt) {
		t.Fatal("a job was deleted before its TTL")
	}
	sweep(t0.Add(10 * time.Second))
	if exists(quick) || !exists(dflt) || !exists(failed) {
		t.Fatalf("after 10s: quick %v (want gone), default %v, failed %v", exists(quick), exists(dflt), exists(failed))
	}
	sweep(t0.Add(time.Hour))
	if exists(dflt) || !exists(failed) {
		t.Fatalf("after 1h: default %v (want gone), failed %v (finished a minute later)", exists(dflt), exists(failed))
	}
	sweep(t0.Add(2 * time.Hour))
	if exists(failed) || !exists(running) {
		t.Fatalf("after 2h: failed %v (want gone), running %v (never finished, TTL 0)", exists(failed), exists(running))
	}
}

func TestRetentionKeepsAtMostMaxCount(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qm")
	ix := runIndex(t)
	js, _ := services(t, []jobs.Option{jobs.WithListIndex(ix)}, q)
	// Other tests' finished jobs share the store: count what is kept.
	t0 := time.Now()
	var names []string
	for i := range 4 {
		name := uniq("m")
		if _, _, _, err := js.Submit(ctx, job(name, q), false); err != nil {
			t.Fatal(err)
		}
		finish(t, js, name, v1alpha1.JobSucceeded, t0.Add(time.Duration(i)*time.Minute+24*time.Hour))
		names = append(names, name)
	}
	clk := clocktesting.NewFakeClock(t0)
	r := jobs.NewRetention(js, ix, jobs.RetentionConfig{MaxCount: 2, Clock: clk})
	if _, err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		_, _, err := js.Get(ctx, name)
		if kept := err == nil; kept != (i >= 2) {
			t.Errorf("job %d (finished %d min after the others' first): kept %v, want %v", i, i, kept, i >= 2)
		}
	}
}
