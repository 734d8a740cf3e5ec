package jobs

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// ErrUnchanged, returned by an UpdateStatus function, writes nothing and
// makes UpdateStatus return the job as stored.
var ErrUnchanged = errors.New("unchanged")

// Cancel moves a job to Cancelled and returns it. Cancelling a cancelled or
// otherwise finished job changes nothing and returns it as it is. The
// dispatcher of a later stage tears down the members of a cancelled gang.
func (s *Service) Cancel(ctx context.Context, name string) (*v1alpha1.Job, int64, error) {
	return s.UpdateStatus(ctx, name, func(st *v1alpha1.JobStatus) error {
		if st.Phase.Terminal() {
			return ErrUnchanged
		}
		now := metav1.NewTime(s.clock.Now())
		st.Phase, st.CompletionTime = v1alpha1.JobCancelled, &now
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: v1alpha1.JobConditionFinished, Status: metav1.ConditionTrue, Reason: "Cancelled",
			Message: "cancelled by the user", LastTransitionTime: now, ObservedGeneration: 1,
		})
		return nil
	})
}

// UpdateStatus changes a job's status with fn, retrying on conflicts, and
// returns the job as stored. fn returns ErrUnchanged to write nothing; any
// other error aborts the update and is returned.
func (s *Service) UpdateStatus(ctx context.Context, name string, fn func(*v1alpha1.JobStatus) error) (*v1alpha1.Job, int64, error) {
	j, rev, err := s.jobs.GuaranteedUpdate(ctx, name, func(j *v1alpha1.Job) (*v1alpha1.Job, error) {
		j.ResourceVersion = ""
		return j, fn(&j.Status)
	})
	if errors.Is(err, ErrUnchanged) {
		return withRevision(j, rev), rev, nil
	}
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(j, rev), rev, nil
}
