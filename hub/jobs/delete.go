// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// deleteAttempts bounds Delete's retries when the job changes under it.
const deleteAttempts = 5

// Delete removes a finished job (Succeeded, Failed or Cancelled) and
// returns its last state. An unfinished job is refused with an
// errs.ErrFailedPrecondition that says to cancel it first: deleting a job
// never stops a gang. What the job leaves in the fleet goes with it: the
// dispatcher deletes the member pods it kept for their logs, the
// dependency copies and rendezvous Services of a job that is gone, and
// releases a reservation still booked (docs/retention.md).
func (s *Service) Delete(ctx context.Context, name string) (*v1alpha1.Job, int64, error) {
	for range deleteAttempts {
		j, rev, err := s.jobs.Get(ctx, name)
		if err != nil {
			return nil, 0, notFound(err, name)
		}
		if !j.Status.Phase.Terminal() {
			return nil, 0, errs.Precondition(fmt.Sprintf("job %q is %s, not finished", name, phaseOf(j)),
				fmt.Sprintf("cancel it first (`shoal job cancel %s`), then delete it", name))
		}
		_, err = s.store.Txn(ctx).If(s.jobs.RevIs(name, rev)).Then(s.jobs.DeleteOp(name)).Commit()
		if errors.Is(err, store.ErrConflict) {
			continue // changed meanwhile: decide again on what it is now
		}
		if err != nil {
			return nil, 0, err
		}
		return withRevision(j, rev), rev, nil
	}
	return nil, 0, errs.Of(store.ErrConflict, "job %q kept changing while it was deleted; try again", name)
}

// phaseOf names the phase of j, Pending before the hub wrote one.
func phaseOf(j *v1alpha1.Job) v1alpha1.JobPhase {
	if j.Status.Phase == "" {
		return v1alpha1.JobPending
	}
	return j.Status.Phase
}

// deleteExpired deletes finished jobs, each only at the revision it was
// found expired at (a job changed since is left for the next sweep), up to
// sweepBatch per transaction. It returns how many it deleted.
func (s *Service) deleteExpired(ctx context.Context, jobs []expired) (int, error) {
	n := 0
	for len(jobs) > 0 {
		b := jobs[:min(len(jobs), sweepBatch)]
		jobs = jobs[len(b):]
		txn := s.store.Txn(ctx)
		for _, e := range b {
			txn.If(s.jobs.RevIs(e.name, e.rev)).Then(s.jobs.DeleteOp(e.name))
		}
		_, err := txn.Commit()
		if err == nil {
			n += len(b)
			continue
		}
		if !errors.Is(err, store.ErrConflict) {
			return n, err
		}
		for _, e := range b { // one changed: delete the others one by one
			_, err := s.store.Txn(ctx).If(s.jobs.RevIs(e.name, e.rev)).Then(s.jobs.DeleteOp(e.name)).Commit()
			switch {
			case err == nil:
				n++
			case !errors.Is(err, store.ErrConflict):
				return n, err
			}
		}
	}
	return n, nil
}
