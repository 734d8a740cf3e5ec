// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Result says what one cycle did.
type Result struct {
	// Placed are the jobs booked, in booking order.
	Placed []string
	// Waiting is how many pending jobs stay pending.
	Waiting int
	// Preempted are the victims marked for preemption.
	Preempted []string
	// Conflict is true when another writer changed the ledger or a job
	// mid-cycle; the remaining placements were dropped and the next cycle
	// decides again on fresh data.
	Conflict bool
}

// Cycle runs one scheduling cycle. held, when not nil, guards every booking
// with the caller's leadership.
func (s *Scheduler) Cycle(ctx context.Context, held *store.Cond) (Result, error) {
	var res Result
	if err := s.restoreFairShare(ctx); err != nil {
		return res, err
	}
	f, err := s.read(ctx)
	if err != nil {
		return res, err
	}
	now := s.cfg.Clock.Now()
	in, byName := s.input(f, now)
	if err := s.saveFairShare(ctx, held, now); err != nil && !errors.Is(err, store.ErrConflict) {
		return res, err
	}
	snap := placement.NewSnapshot(f.clusters, f.allocations(now))
	if len(in.Pending) > 0 || len(in.Terminating) > 0 {
		if err := s.decide(ctx, f, snap, in, byName, held, now, &res); err != nil {
			return res, err
		}
		observeCycle(res)
	}
	if res.Conflict {
		return res, nil // the snapshot holds placements not booked: no status from it
	}
	return res, s.writeQueueStatus(ctx, f, snap, in.Queues, res.Placed, held)
}

// decide runs the placement engine on the snapshot and carries out its
// decision: bookings, explanations of waiting jobs, preemptions.
func (s *Scheduler) decide(ctx context.Context, f *fleet, snap *placement.Snapshot, in placement.Input,
	byName map[string]store.Item[*v1alpha1.Job], held *store.Cond, now time.Time, res *Result) error {
	d := placement.Schedule(snap, in, s.cfg.Options...)
	s.holds = d.Reservations
	for i := range d.Placements {
		p := &d.Placements[i]
		err := s.book(ctx, f, byName[p.Gang], p, held, now)
		if errors.Is(err, store.ErrConflict) {
			res.Conflict = true
			break
		}
		if err != nil {
			return err
		}
		res.Placed = append(res.Placed, p.Gang)
	}
	for _, w := range d.Waiting {
		if err := s.explain(ctx, byName[w.Gang], w.Why, now); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	res.Waiting = len(d.Waiting)
	for _, p := range d.Preemptions {
		err := s.preempt(ctx, f, p, now)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		if err == nil {
			res.Preempted = append(res.Preempted, p.Victim)
		}
	}
	return nil
}

// input builds the placement input from the fleet: pending jobs not
// backing off and not still holding a reservation, queues, usage and the
// gangs being preempted.
func (s *Scheduler) input(f *fleet, now time.Time) (placement.Input, map[string]store.Item[*v1alpha1.Job]) {
	in := placement.Input{Now: now, Queues: queuesOf(f.queues), Reservations: s.holds, Terminating: map[string]string{}}
	byName := map[string]store.Item[*v1alpha1.Job]{}
	held := map[string]int{}
	for _, it := range f.jobs {
		j := it.Object
		if r, ok := f.ledger.Reservations[it.Name]; ok {
			held[j.Spec.Queue] += r.Object.Gang.GPUs()
			if jobs.Preempted(j) {
				in.Terminating[it.Name] = j.Annotations[v1alpha1.AnnotationPreemptedBy]
			}
			continue
		}
		if j.Status.Phase != v1alpha1.JobPending || backingOff(j, now) {
			continue
		}
		byName[it.Name] = it
		in.Pending = append(in.Pending, GangOf(j))
	}
	s.fair.Advance(now, held)
	in.Usage = s.fair.Usage()
	return in, byName
}

// backingOff reports whether the job's requeue backoff is not over.
func backingOff(j *v1alpha1.Job, now time.Time) bool {
	t, ok := jobs.NotBefore(j)
	return ok && now.Before(t)
}

// book writes one placement: the reservation, the cluster counters and the
// job's Placed status (hub/jobs' Book) in one transaction.
func (s *Scheduler) book(ctx context.Context, f *fleet, it store.Item[*v1alpha1.Job], p *placement.Placement,
	held *store.Cond, now time.Time) error {
	j := it.Object
	if j == nil {
		return fmt.Errorf("placement for unknown job %q", p.Gang)
	}
	g := GangOf(j)
	r := s.reservation(f, &g, p, j.Status.Epoch+1, now)
	jobCond, jobOp, _, err := s.status.Ops(it, jobs.Book(booking(j, r, p, now)))
	if err != nil {
		return err
	}
	conds, ops := s.ledger.Book(f.ledger, r)
	conds = append(conds, jobCond)
	if held != nil {
		conds = append(conds, *held)
	}
	ops = append(ops, jobOp)
	rev, err := s.st.Txn(ctx).If(conds...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("book job %q: %w", it.Name, err)
	}
	f.ledger.Booked(r, rev)
	klog.FromContext(ctx).V(2).Info("placed job", "job", it.Name, "epoch", r.Epoch,
		"clusters", r.Clusters, "domain", r.Domain, "members", len(r.Members))
	return nil
}

// explain asks hub/jobs to record why a job waits, when that changed.
func (s *Scheduler) explain(ctx context.Context, it store.Item[*v1alpha1.Job], why *placement.Unschedulable, now time.Time) error {
	if it.Object == nil || why == nil {
		return nil
	}
	_, err := s.status.Apply(ctx, it, jobs.Explain(string(why.Reason), why.Message, now))
	return err
}

// preempt asks hub/jobs to mark a running job as preempted; hub/dispatch
// stops it after its grace period and requeues it.
func (s *Scheduler) preempt(ctx context.Context, f *fleet, p placement.Preemption, now time.Time) error {
	for _, it := range f.jobs {
		if it.Name != p.Victim {
			continue
		}
		msg := fmt.Sprintf("preempted by job %s; %s to checkpoint. %s", p.Preemptor, p.Grace, p.Reason)
		_, err := s.status.Apply(ctx, it, jobs.MarkPreempted(p.Preemptor, msg, now))
		return err
	}
	return nil
}
