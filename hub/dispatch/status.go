// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"sync"
	"time"

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
		if d.deferMembers(s) {
			return false, nil
		}
		if s.started {
			// The ledger first: a crash before the job write marks it again.
			if err := d.ledger.MarkStarted(ctx, s.name, s.res.Epoch, s.now, d.guards()...); err != nil {
				return false, err
			}
		}
		t = jobs.Aggregate(memberStatuses(s), s.res.Epoch, s.now)
	default:
		return false, nil
	}
	before, prev := s.job.Revision, s.job.Object
	it, err := d.status.Apply(ctx, s.job, t, d.guards()...)
	if err != nil {
		return false, err
	}
	s.job = it
	traceStatus(ctx, s, prev)
	switch {
	case s.decision != nil:
		dec := s.decision.Dispatch
		observeDecision(s.job.Object, dec, s.now)
		if dec.Phase == v1alpha1.DispatchAborting {
			klog.FromContext(ctx).Info("Aborting a gang's dispatch", "reason", dec.Reason, "message", dec.Message)
		}
		if s.decision.Dispatch.Phase == v1alpha1.DispatchPreparing {
			d.observeStart(s.name, s.res.Epoch, s.now)
		}
	case s.started:
		d.observeRunning(s.name, s.job.Object, s.res.Epoch, s.now)
	}
	if it.Revision != before && s.decision == nil && s.aggregate {
		d.membersWritten(s.name, s.now)
	}
	return it.Revision != before, nil
}

// memberStatusEvery is how often, at most, Lead writes a job whose member
// phases changed while its own phase did not (members starting one by one,
// or ending one by one). Each such write is a job record rewritten in the
// store, and a change every watcher of jobs (the scheduler among them)
// reacts to: a 256-member gang would otherwise be rewritten once per
// member. The job's own transitions (every member running, every member
// succeeded, a failure) are written at once.
const memberStatusEvery = 500 * time.Millisecond

// deferMembers says whether the member phases s would write wait: Lead
// runs, the aggregate changes no job phase, and the job's member phases
// were written less than memberStatusEvery ago. It then sets s.wake for the
// reconcile that writes them. Pass, driven by hand, writes every change.
func (d *Dispatcher) deferMembers(s *scope) bool {
	if s.started || s.finished {
		return false
	}
	next, ok := d.writtenWithin(&d.memberWrites, s, memberStatusEvery)
	if ok {
		s.wakeAt(next)
	}
	return ok
}

// writtenWithin says whether Lead runs and wrote what written records for
// s's job (by job name) less than every ago, and when every is over.
func (d *Dispatcher) writtenWithin(written *sync.Map, s *scope, every time.Duration) (time.Time, bool) {
	if !d.coalescing() {
		return time.Time{}, false
	}
	v, ok := written.Load(s.name)
	if !ok {
		return time.Time{}, false
	}
	next := v.(time.Time).Add(every)
	return next, s.now.Before(next)
}

// membersWritten records when job's member phases were written.
func (d *Dispatcher) membersWritten(job string, at time.Time) {
	if d.coalescing() {
		d.memberWrites.Store(job, at)
	}
}
