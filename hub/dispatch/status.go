// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// writeStatus is the one place a pass changes the job: it asks hub/jobs for
// the decision the phases took or, without one, for the member phases
// folded in. It reports whether it wrote; the teardown's release, itself a
// job write, then waits for the next pass.
func (d *Dispatcher) writeStatus(ctx context.Context, s *scope) (bool, error) {
	var t jobs.Transition
	switch {
	case s.decision != nil:
		t = jobs.Decide(*s.decision)
	case s.aggregate:
		if s.started {
			// The ledger first: a crash before the job write marks it again.
			if err := d.ledger.MarkStarted(ctx, s.name, s.res.Epoch, s.now); err != nil {
				return false, err
			}
		}
		t = jobs.Aggregate(memberStatuses(s), s.res.Epoch, s.now)
	default:
		return false, nil
	}
	before := s.job.Revision
	it, err := d.status.Apply(ctx, s.job, t)
	if err != nil {
		return false, err
	}
	s.job = it
	switch {
	case s.decision != nil:
		dec := s.decision.Dispatch
		observeDecision(string(dec.Phase))
		if dec.Phase == v1alpha1.DispatchAborting {
			klog.FromContext(ctx).Info("Aborting a gang's dispatch", "job", s.name, "epoch", dec.Epoch,
				"reason", dec.Reason, "message", dec.Message)
		}
		if s.decision.Dispatch.Phase == v1alpha1.DispatchPreparing {
			d.observeStart(s.name, s.res.Epoch, s.now)
		}
	case s.started:
		d.observeRunning(s.name, s.res.Epoch, s.now)
	}
	return it.Revision != before, nil
}
