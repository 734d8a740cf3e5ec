// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// ReportCheckpoint records a checkpoint of job name, reported by `by` (a
// user, or agent:<cluster>), as its latest (status.checkpoint) and returns
// the job. The report is validated first (field paths, InvalidArgument).
// Reporting the latest again (same step and URI) changes nothing, unless
// its time is later (whole seconds): then only its time, report time and
// reporter move; a step below the latest, or the latest step at another
// URI, is refused
// (FailedPrecondition), as is a job that never ran. A finished job still
// takes a report: its last checkpoint may arrive after its members ended.
func (s *Service) ReportCheckpoint(ctx context.Context, name string, r v1alpha1.CheckpointReport, by string) (*v1alpha1.Job, int64, error) {
	now := s.clock.Now()
	if err := r.Validate(name, now); err != nil {
		return nil, 0, err
	}
	if r.Time.IsZero() {
		r.Time = now
	}
	wrote := false
	j, rev, err := s.change(ctx, name, func(j *v1alpha1.Job) (*v1alpha1.Job, bool, error) {
		n := j.DeepCopy()
		n.ResourceVersion = ""
		changed, err := recordCheckpoint(n, r, by, now)
		wrote = changed
		return n, changed, err
	})
	if err == nil && wrote {
		checkpoints.Inc()
	}
	return j, rev, err
}

// recordCheckpoint makes r the job's latest checkpoint; false: it already is.
func recordCheckpoint(j *v1alpha1.Job, r v1alpha1.CheckpointReport, by string, now time.Time) (bool, error) {
	st := &j.Status
	if st.Epoch == 0 {
		return false, errs.Precondition(fmt.Sprintf("job %q has not run yet (phase %s), so it has no checkpoint to report", j.Name, st.Phase),
			"report checkpoints once its members run")
	}
	last := st.Checkpoint
	if last != nil {
		switch {
		case r.Step == last.Step && r.URI == last.URI:
			// The same checkpoint again: a later time is the job saying its
			// state is still that one (e.g. saved again on a preemption
			// notice), which ends a preemption grace; the count stays.
			if !r.Time.Truncate(time.Second).After(last.Time.Time) {
				return false, nil
			}
			last.Time, last.ReportedAt, last.ReportedBy = metav1.NewTime(r.Time.UTC()), metav1.NewTime(now.UTC()), by
			return true, nil
		case r.Step < last.Step:
			return false, errs.Precondition(fmt.Sprintf("job %q already reported step %d (%s); step %d is older", j.Name, last.Step, last.URI, r.Step),
				"a job's checkpoints only go forward")
		case r.Step == last.Step:
			return false, errs.Precondition(fmt.Sprintf("job %q already reported step %d at %s, not %s", j.Name, last.Step, last.URI, r.URI),
				"report a new step for a new checkpoint")
		}
	}
	c := &v1alpha1.JobCheckpoint{Step: r.Step, URI: r.URI, Time: metav1.NewTime(r.Time.UTC()), ReportedAt: metav1.NewTime(now.UTC()),
		ReportedBy: by, Epoch: st.Epoch, Count: 1}
	if last != nil {
		c.Count = last.Count + 1
		if d := r.Time.Sub(last.Time.Time); d > 0 {
			c.IntervalSeconds = int64(d / time.Second)
		}
	} else if st.StartTime != nil {
		if d := r.Time.Sub(st.StartTime.Time); d > 0 {
			c.IntervalSeconds = int64(d / time.Second)
		}
	}
	st.Checkpoint = c
	return true, nil
}
