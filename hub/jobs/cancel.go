// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// errUnchanged ends a GuaranteedUpdate that has nothing to write.
var errUnchanged = errors.New("unchanged")

// Cancel moves a job to Cancelled and returns it. Cancelling a cancelled or
// otherwise finished job changes nothing and returns it as it is. The
// dispatcher tears down the members of a cancelled gang.
func (s *Service) Cancel(ctx context.Context, name string) (*v1alpha1.Job, int64, error) {
	return s.update(ctx, name, cancel(s.clock.Now()))
}

// update applies t to the job as stored, retrying on conflicts: for changes
// the user asks for, which hold whatever else changed meanwhile.
func (s *Service) update(ctx context.Context, name string, t Transition) (*v1alpha1.Job, int64, error) {
	return s.change(ctx, name, func(j *v1alpha1.Job) (*v1alpha1.Job, bool, error) { return next(j, t) })
}

// change stores what fn makes of the job as stored, retrying on conflicts;
// fn reports whether it changed anything (nothing is written otherwise) or
// why the change is refused. It returns the job as stored after it.
func (s *Service) change(ctx context.Context, name string, fn func(*v1alpha1.Job) (*v1alpha1.Job, bool, error)) (*v1alpha1.Job, int64, error) {
	j, rev, err := s.jobs.GuaranteedUpdate(ctx, name, func(j *v1alpha1.Job) (*v1alpha1.Job, error) {
		n, changed, err := fn(j)
		if err == nil && !changed {
			err = errUnchanged
		}
		return n, err
	})
	if errors.Is(err, errUnchanged) {
		return withRevision(j, rev), rev, nil
	}
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(j, rev), rev, nil
}
