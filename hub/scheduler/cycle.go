package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
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
	f, err := s.read(ctx)
	if err != nil {
		return res, err
	}
	now := s.cfg.Clock.Now()
	in, byName := s.input(f, now)
	if len(in.Pending) == 0 && len(in.Terminating) == 0 {
		return res, nil
	}
	snap := placement.NewSnapshot(f.clusters, f.allocations())
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
			return res, err
		}
		res.Placed = append(res.Placed, p.Gang)
	}
	for _, w := range d.Waiting {
		if err := s.explain(ctx, byName[w.Gang], w.Why, now); err != nil && !errors.Is(err, store.ErrConflict) {
			return res, err
		}
	}
	res.Waiting = len(d.Waiting)
	for _, p := range d.Preemptions {
		err := s.preempt(ctx, f, p, now)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return res, err
		}
		if err == nil {
			res.Preempted = append(res.Preempted, p.Victim)
		}
	}
	observeCycle(res)
	return res, nil
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
			if c := meta.FindStatusCondition(j.Status.Conditions, ConditionPreempted); c != nil && c.Status == metav1.ConditionTrue {
				in.Terminating[it.Name] = j.Annotations[AnnotationPreemptedBy]
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

// backingOff reports whether the job's not-before annotation is in the future.
func backingOff(j *v1alpha1.Job, now time.Time) bool {
	v, ok := j.Annotations[AnnotationNotBefore]
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return err == nil && now.Before(t)
}

// book writes one placement: the reservation, the cluster counters and the
// job's Placed status in one transaction.
func (s *Scheduler) book(ctx context.Context, f *fleet, it store.Item[*v1alpha1.Job], p *placement.Placement,
	held *store.Cond, now time.Time) error {
	j := it.Object
	if j == nil {
		return fmt.Errorf("placement for unknown job %q", p.Gang)
	}
	g := GangOf(j)
	r := s.reservation(f, &g, p, j.Status.Epoch+1, now)
	next := placedJob(j, r, p, now)
	conds, ops := s.ledger.Book(f.ledger, r)
	conds = append(conds, s.jobs.RevIs(it.Name, it.Revision))
	if held != nil {
		conds = append(conds, *held)
	}
	ops = append(ops, s.jobs.PutOp(it.Name, next))
	rev, err := s.st.Txn(ctx).If(conds...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("book job %q: %w", it.Name, err)
	}
	f.ledger.Booked(r, rev)
	klog.FromContext(ctx).V(2).Info("placed job", "job", it.Name, "epoch", r.Epoch,
		"clusters", r.Clusters, "domain", r.Domain, "members", len(r.Members))
	return nil
}

// explain records why a job waits, when that changed.
func (s *Scheduler) explain(ctx context.Context, it store.Item[*v1alpha1.Job], why *placement.Unschedulable, now time.Time) error {
	j := it.Object
	if j == nil || why == nil {
		return nil
	}
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
	if c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(why.Reason) && c.Message == why.Message {
		return nil
	}
	next := CopyJob(j)
	next.ResourceVersion = ""
	t := metav1.NewTime(now)
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
		Status: metav1.ConditionFalse, Reason: string(why.Reason), Message: why.Message, LastTransitionTime: t,
		ObservedGeneration: j.Generation})
	next.Status.Placement = &v1alpha1.PlacementStatus{Explanation: why.Message, Time: &t}
	_, err := s.jobs.Update(ctx, it.Name, next, it.Revision)
	return err
}

// preempt marks a running job as preempted; hub/dispatch stops it after
// its grace period and requeues it.
func (s *Scheduler) preempt(ctx context.Context, f *fleet, p placement.Preemption, now time.Time) error {
	for _, it := range f.jobs {
		if it.Name != p.Victim {
			continue
		}
		if c := meta.FindStatusCondition(it.Object.Status.Conditions, ConditionPreempted); c != nil && c.Status == metav1.ConditionTrue {
			return nil
		}
		next := CopyJob(it.Object)
		next.ResourceVersion = ""
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[AnnotationPreemptedBy] = p.Preemptor
		meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: ConditionPreempted,
			Status: metav1.ConditionTrue, Reason: "PreemptedBy", LastTransitionTime: metav1.NewTime(now),
			Message:            fmt.Sprintf("preempted by job %s; %s to checkpoint. %s", p.Preemptor, p.Grace, p.Reason),
			ObservedGeneration: it.Object.Generation})
		_, err := s.jobs.Update(ctx, it.Name, next, it.Revision)
		return err
	}
	return nil
}
