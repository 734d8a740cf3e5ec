// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

func TestReportCheckpoint(t *testing.T) {
	ctx, q := testCtx(t), uniq("org")
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	js, _ := services(t, []jobs.Option{jobs.WithClock(clk)}, q)
	name := uniq("train")
	if _, _, _, err := js.Submit(ctx, job(name, q), false); err != nil {
		t.Fatal(err)
	}
	report := func(step int64, uri string, at time.Time) (*v1alpha1.Job, error) {
		j, _, err := js.ReportCheckpoint(ctx, name, v1alpha1.CheckpointReport{Step: step, URI: uri, Time: at}, "alice")
		return j, err
	}
	// A job that never ran has nothing to report.
	if _, err := report(10, "s3://b/step-10", time.Time{}); !errors.Is(err, errs.ErrFailedPrecondition) ||
		!strings.Contains(err.Error(), "has not run yet") {
		t.Fatalf("pending job: %v", err)
	}
	start := metav1.NewTime(t0)
	if _, _, err := js.UpdateStatus(ctx, name, func(st *v1alpha1.JobStatus) error {
		st.Phase, st.Epoch, st.StartTime = v1alpha1.JobRunning, 3, &start
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(time.Hour))
	j, err := report(100, "s3://b/step-100", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c := j.Status.Checkpoint
	if c == nil || c.Step != 100 || c.URI != "s3://b/step-100" || !c.Time.Time.Equal(t0.Add(time.Hour)) ||
		c.ReportedBy != "alice" || c.Epoch != 3 || c.Count != 1 || c.IntervalSeconds != 3600 {
		t.Fatalf("first checkpoint: %+v", c)
	}
	// The same again, taken no later, changes nothing (no new revision).
	_, rev1, _ := js.Get(ctx, name)
	clk.SetTime(t0.Add(61 * time.Minute))
	if j, err := report(100, "s3://b/step-100", t0.Add(time.Hour+300*time.Millisecond)); err != nil || j.Status.Checkpoint.Count != 1 {
		t.Fatalf("repeat: %v %+v", err, j.Status.Checkpoint)
	}
	if _, rev2, _ := js.Get(ctx, name); rev2 != rev1 {
		t.Errorf("a repeated report wrote the job (revision %d → %d)", rev1, rev2)
	}
	// Taken later (saved again, e.g. on a preemption notice): its time moves, not its count.
	if j, err := report(100, "s3://b/step-100", time.Time{}); err != nil || j.Status.Checkpoint.Count != 1 ||
		!j.Status.Checkpoint.Time.Time.Equal(t0.Add(61*time.Minute)) || !j.Status.Checkpoint.ReportedAt.Time.Equal(t0.Add(61*time.Minute)) {
		t.Fatalf("repeat taken later: %v %+v", err, j.Status.Checkpoint)
	}
	// Older steps and the same step elsewhere are refused.
	if _, err := report(90, "s3://b/step-90", time.Time{}); !errors.Is(err, errs.ErrFailedPrecondition) ||
		!strings.Contains(err.Error(), "step 90 is older") {
		t.Errorf("older step: %v", err)
	}
	if _, err := report(100, "s3://b/other", time.Time{}); !errors.Is(err, errs.ErrFailedPrecondition) {
		t.Errorf("same step, other URI: %v", err)
	}
	// Invalid reports name their fields and change nothing.
	_, err = report(-1, "not a uri", t0.Add(3*time.Hour))
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) || len(inv.Errs) != 3 {
		t.Fatalf("invalid report: %v", err)
	}
	for _, f := range []string{"step", "uri", "time"} {
		if !strings.Contains(err.Error(), f+":") {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
	// A later one, with its own time: counted, interval from the last
	// (as confirmed at 61 minutes).
	clk.SetTime(t0.Add(95 * time.Minute))
	j, err = report(200, "s3://b/step-200", t0.Add(90*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if c := j.Status.Checkpoint; c.Step != 200 || c.Count != 2 || c.IntervalSeconds != 1740 || !c.ReportedAt.Time.Equal(t0.Add(95*time.Minute)) {
		t.Fatalf("second checkpoint: %+v", c)
	}
	if _, _, err := js.ReportCheckpoint(ctx, "no-such-job", v1alpha1.CheckpointReport{Step: 1, URI: "s3://x"}, "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}
