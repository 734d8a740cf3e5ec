// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
	"unique"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
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
	// Revision is the store revision of the ledger the cycle decided on.
	Revision int64
	// placed are the jobs of Placed, as the cycle read them.
	placed []store.Item[*v1alpha1.Job]
	// explained is how many waiting jobs' explanations the cycle wrote
	// (or tried to).
	explained int
}

// Cycle runs one scheduling cycle. held, when not nil, guards every booking
// with the caller's leadership.
func (s *Scheduler) Cycle(ctx context.Context, held *store.Cond) (Result, error) {
	defer s.observeDuration(s.cfg.Clock.Now())
	ctx = withCycleStart(ctx, time.Now())
	clock := newPhaseClock(s.threadCPU, s.cfg.SlowCycle)
	var res Result
	pending, reservations := 0, 0
	defer func() { clock.end(klog.FromContext(ctx), res, pending, reservations) }()
	if err := s.restoreFairShare(ctx); err != nil {
		return res, err
	}
	f, err := s.read(ctx)
	if err != nil {
		clock.done("read")
		return res, err
	}
	clock.doneWaiting("read", f.waited, f.waits)
	res.Revision = f.ledger.Revision
	pending, reservations = len(f.pendingJobs), len(f.booked)
	klog.FromContext(ctx).V(4).Info("scheduling on a snapshot", "revisions", f.revisions, "pending", len(f.pendingJobs), "reservations", len(f.booked))
	now := s.cfg.Clock.Now()
	in, pend := s.input(f, now)
	if err := s.saveFairShare(ctx, held, now); err != nil && !errors.Is(err, store.ErrConflict) {
		return res, err
	}
	clock.done("input")
	layouts := s.snaps.Layouts
	snap, changed := s.placementSnapshot(f)
	if s.builtHook != nil {
		s.builtHook(f, snap, changed)
	}
	if s.snaps.Layouts != layouts {
		snapshotLayouts.Inc()
		klog.FromContext(ctx).V(2).Info("laid the fleet out afresh for the placement snapshot", "why", s.snaps.LayoutReason)
	}
	clock.done("snapshot")
	if len(in.PendingRefs) > 0 || len(in.Terminating) > 0 {
		if err := s.decide(ctx, f, snap, in, pend, held, now, &res, clock); err != nil {
			return res, err
		}
		observeCycle(res)
	}
	if res.Conflict {
		return res, nil // the snapshot holds placements not booked: no status from it
	}
	usage := snap.QueueUsage(in.Queues)
	f.tally.placed(res.placed)
	s.observeFleet(f, snap, in, usage, res)
	err = s.writeQueueStatus(ctx, f, usage, held)
	clock.done("status")
	return res, err
}

// decide runs the placement engine on the snapshot and carries out its
// decision: bookings, explanations of waiting jobs, preemptions.
func (s *Scheduler) decide(ctx context.Context, f *fleet, snap *placement.Snapshot, in placement.Input,
	pend pendingSet, held *store.Cond, now time.Time, res *Result, clock *phaseClock) error {
	d := placement.Schedule(snap, in, s.cfg.Options...)
	s.waits = d.Waiting // read by this cycle alone: the next one's WaitBuffer
	decided := time.Now()
	clock.done("decide")
	s.holds = d.Reservations
	if err := s.saveHolds(ctx, held); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	for lo := 0; lo < len(d.Placements) && !res.Conflict; {
		hi := bookingGroup(d.Placements, lo)
		booking := time.Now()
		n, err := s.bookGroup(ctx, f, pend, d.Placements[lo:hi], held, now)
		if errors.Is(err, store.ErrConflict) {
			res.Conflict = true
		} else if err != nil {
			return err
		}
		for _, p := range d.Placements[lo : lo+n] {
			it := pend.item(p.Ref, p.Gang)
			traceBooking(ctx, it, &p, decided, booking, len(d.Waiting))
			res.Placed, res.placed = append(res.Placed, p.Gang), append(res.placed, it)
		}
		lo = hi
	}
	clock.done("book")
	explained, err := s.explainAll(ctx, f, d.Waiting, pend, held, now)
	res.explained = explained
	clock.done("explain")
	if err != nil {
		return err
	}
	res.Waiting = len(d.Waiting)
	for _, p := range d.Preemptions {
		err := s.preempt(ctx, f, p, held, now)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		if err == nil {
			res.Preempted = append(res.Preempted, p.Victim)
		}
	}
	clock.done("preempt")
	return nil
}

// input builds the placement input from the fleet: pending jobs not
// backing off and not still holding a reservation, queues, usage and the
// gangs being preempted. It counts the jobs (f.tally) from the index's
// counts and the reservations, and returns the pending jobs (pendingSet):
// the job of the input's pending gang i, whose Ref is i
// (placement.Gang.Ref), is the set's [i], so the decision's placements
// and waits find their jobs without a lookup by name.
//
// The pass reads the snapshot's reservations and its pending jobs' forms,
// made when each job's revision was decoded (cachedJob), not every job;
// the pending gangs' and jobs' arrays are the last cycle's, filled again:
// at 35,000 pending jobs growing them anew cost more than the rest of the
// pass.
func (s *Scheduler) input(f *fleet, now time.Time) (placement.Input, pendingSet) {
	in := placement.Input{Now: now, Queues: queuesOf(f.queues), Reservations: s.holds, Terminating: make(map[string]string, len(f.terminating)),
		PendingRefs: s.pending[:0], WaitBuffer: s.waits}
	pend := pendingSet{items: s.pendingJobs.items[:0], forms: s.pendingJobs.forms[:0]}
	f.tally = f.countJobs()
	maps.Copy(in.Terminating, f.terminating)
	reservedPending := f.reservedPending
	var poolsOf string // the queue of pools, the last gang's pools (found: set)
	var pools []placement.PoolFilter
	found := false
	for _, a := range f.pendingJobs {
		pf := a.pending
		if a.phase != v1alpha1.JobPending || (pf.backoff && now.Before(pf.notBefore)) ||
			(reservedPending != nil && reservedPending[a.Name]) {
			continue
		}
		if !found || a.queue != poolsOf {
			poolsOf, pools, found = a.queue, f.gangPools(a.queue), true
		}
		// The form's own gang, not a copy: only the cycle's thread sets
		// its pools and ref, and only the engine reads them.
		g := &pf.gang
		g.Pools, g.Ref = pools, len(in.PendingRefs)
		pend.items, pend.forms = append(pend.items, a.Item), append(pend.forms, pf)
		in.PendingRefs = append(in.PendingRefs, g)
	}
	s.pending, s.pendingJobs = in.PendingRefs, pend
	s.fair.Advance(now, f.tally.held())
	in.Usage = s.fair.Usage()
	return in, pend
}

// pendingSet is a cycle's pending jobs (input), aligned with its input's
// pending gangs: items[i] and forms[i] are the job and pending form of the
// gang whose Ref is i.
type pendingSet struct {
	items []store.Item[*v1alpha1.Job]
	forms []*pendingForm
}

// job is the job and form of a gang of the decision (ref and name, as its
// Placement or Wait carries them); the zero Item and nil when the set
// does not hold it.
func (p pendingSet) job(ref int, gang string) (store.Item[*v1alpha1.Job], *pendingForm) {
	if ref < 0 || ref >= len(p.items) || p.items[ref].Name != gang {
		return store.Item[*v1alpha1.Job]{}, nil
	}
	return p.items[ref], p.forms[ref]
}

// item is job's item alone.
func (p pendingSet) item(ref int, gang string) store.Item[*v1alpha1.Job] {
	it, _ := p.job(ref, gang)
	return it
}

// pendingForm is what a cycle reads of a pending job, made once per
// revision as the job is decoded into the cache (cachedJob): its gang
// (without its pools), the gang's GPUs, the end of its requeue backoff
// (backoff: it has one), and its explanation (explained: its Placed
// condition when False, meaning that condition's message's meaningOf).
type pendingForm struct {
	gang      placement.Gang
	gpus      int
	notBefore time.Time
	backoff   bool
	explained *metav1.Condition
	// explainedAs is explained's reason and meaning (explanationKey; the
	// zero handle when not explained): a cycle compares it with a wait's
	// by pointer, without reading the job's condition, which for 35,000
	// waiting jobs was cache misses on 35,000 objects.
	explainedAs unique.Handle[string]
}

func pendingFormOf(j *v1alpha1.Job) pendingForm {
	f := pendingForm{gang: GangOf(j)}
	f.gpus = f.gang.GPUs()
	f.notBefore, f.backoff = jobs.NotBefore(j)
	if c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced); c != nil && c.Status == metav1.ConditionFalse {
		f.explained, f.explainedAs = c, explanationKey(c.Reason, c.Message)
	}
	return f
}

// explains says whether the job already carries why as its explanation,
// in meaning (explained, on the job the form was made of), with the
// meanings of the cycle's messages memoized in m.
func (f *pendingForm) explains(why *placement.Unschedulable, m *meaningMemo) bool {
	return f.explained != nil && f.explainedAs == m.of(why)
}

// Bounds of one booking transaction (bookingGroup): at most
// bookGroupMax placements, bookGroupOps guards and writes each (etcd's own
// default limit is 128 operations a transaction), and bookGroupMembers
// members in all (a reservation and its job's status each list every
// member: a transaction stays well under etcd's 1.5 MiB request limit).
const (
	bookGroupMax     = 32
	bookGroupOps     = 120
	bookGroupMembers = 1024
)

// bookingGroup returns the end of the group of placements booked together
// from lo: at least one, within the bounds above.
func bookingGroup(ps []placement.Placement, lo int) int {
	clusters := map[string]bool{}
	ops, members := 0, 0
	hi := lo
	for hi < len(ps) && hi-lo < bookGroupMax {
		p := &ps[hi]
		add := 2 // the reservation and the job: a guard and a write each
		for _, c := range p.Clusters {
			if !clusters[c] {
				add++
			}
		}
		n := 0
		for _, a := range p.Assignments {
			n += a.Members
		}
		if hi > lo && (ops+add > bookGroupOps || members+n > bookGroupMembers) {
			break
		}
		for _, c := range p.Clusters {
			clusters[c] = true
		}
		ops += add
		members += n
		hi++
	}
	return hi
}

// bookGroup books placements in one transaction (bookOps each) and returns
// how many it booked: all, or, when the group's guards fail, those booked
// one by one before the first that conflicts (its error then wraps
// store.ErrConflict).
func (s *Scheduler) bookGroup(ctx context.Context, f *fleet, pend pendingSet,
	ps []placement.Placement, held *store.Cond, now time.Time) (int, error) {
	cached := make([]store.Item[*v1alpha1.Job], len(ps))
	for i := range ps {
		it := pend.item(ps[i].Ref, ps[i].Gang)
		if it.Object == nil {
			return 0, fmt.Errorf("placement for unknown job %q", ps[i].Gang)
		}
		cached[i] = it
	}
	whole, err := s.wholeJobs(ctx, f, cached)
	if err != nil {
		return 0, err
	}
	if len(ps) > 1 {
		var conds []store.Cond
		var ops []store.Op
		rs := make([]*ledger.Reservation, len(ps))
		for i := range ps {
			r, c, o, err := s.bookOps(f, whole[i], &ps[i], now)
			if err != nil {
				return 0, err
			}
			rs[i], conds, ops = r, append(conds, c), append(ops, o)
		}
		lc, lo := s.ledger.BookAll(f.ledger, rs)
		conds, ops = append(conds, lc...), append(ops, lo...)
		if held != nil {
			conds = append(conds, *held)
		}
		rev, err := s.st.Txn(ctx).If(conds...).Then(ops...).Commit()
		switch {
		case err == nil:
			for _, r := range rs {
				s.booked1(ctx, f, r, rev)
			}
			return len(ps), nil
		case !errors.Is(err, store.ErrConflict):
			return 0, fmt.Errorf("book %d jobs from %q: %w", len(ps), ps[0].Gang, err)
		}
		// One of them changed: book each alone, up to the one that did.
	}
	for i := range ps {
		if err := s.book(ctx, f, whole[i], &ps[i], held, now); err != nil {
			return i, err
		}
	}
	return len(ps), nil
}

// bookOps returns a placement's reservation and its job's guarded write
// of the Placed status (hub/jobs' Book).
func (s *Scheduler) bookOps(f *fleet, it store.Item[*v1alpha1.Job], p *placement.Placement,
	now time.Time) (*ledger.Reservation, store.Cond, store.Op, error) {
	j := it.Object // bookGroup refused a placement for an unknown job
	g := f.gangOf(j)
	r := s.reservation(f, &g, p, j.Status.Epoch+1, now)
	jobCond, jobOp, _, err := s.status.Ops(it, jobs.Book(booking(j, r, p, now)))
	return r, jobCond, jobOp, err
}

// book writes one placement: the reservation, the cluster counters and the
// job's Placed status (hub/jobs' Book) in one transaction.
func (s *Scheduler) book(ctx context.Context, f *fleet, it store.Item[*v1alpha1.Job], p *placement.Placement,
	held *store.Cond, now time.Time) error {
	r, jobCond, jobOp, err := s.bookOps(f, it, p, now)
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
	s.booked1(ctx, f, r, rev)
	return nil
}

// booked1 records one reservation written at rev.
func (s *Scheduler) booked1(ctx context.Context, f *fleet, r *ledger.Reservation, rev int64) {
	f.ledger.Booked(r, rev)
	s.wroteAt(rev)
	s.booked = max(s.booked, rev)
	klog.FromContext(ctx).V(2).Info("placed job", "job", r.Job, "epoch", r.Epoch,
		"clusters", r.Clusters, "domain", r.Domain, "members", len(r.Members))
}

// explain asks hub/jobs to record why a job waits when that changed in
// meaning (explanation.go: not when only counts did), guarded like a
// booking by held. It returns the revision it wrote at (0: none).
func (s *Scheduler) explain(ctx context.Context, it store.Item[*v1alpha1.Job], why *placement.Unschedulable,
	held *store.Cond, now time.Time) (int64, error) {
	if it.Object == nil || why == nil || explained(it.Object, why) {
		return 0, nil
	}
	next, err := s.status.Apply(ctx, it, jobs.Explain(string(why.Reason), why.Message, now), guards(held)...)
	if err == nil && next.Revision != it.Revision {
		return next.Revision, nil
	}
	return 0, err
}

// wroteAt records that this leader wrote a job at rev.
func (s *Scheduler) wroteAt(rev int64) {
	s.wroteMu.Lock()
	s.wrote = max(s.wrote, rev)
	s.wroteMu.Unlock()
}

// explainWorkers bounds the explanations written at once. Each is its own
// guarded transaction; one after the other, a new leader that finds
// hundreds of jobs submitted since the last cycle spent tens of seconds on
// them (a commit each on a 3-member etcd) before its next booking.
const explainWorkers = 16

// explainGroup bounds the explanations written in one transaction: each
// is a guard and a write of the whole job, so a group stays well inside
// etcd's limits of 128 operations and 1.5 MiB a request.
const explainGroup = 16

// explainAll explains every waiting job whose explanation changed in
// meaning, explainGroup jobs to a guarded transaction and explainWorkers
// transactions at a time: a hub that took thousands of jobs since its
// last cycle writes each one's first explanation, and one transaction per
// job was most of the store's writes under a steady intake. A group whose
// guards fail (one of its jobs changed meanwhile) is written job by job;
// a job that changed is left to the next cycle. A job's first
// explanation is written at once; an explanation that changed is written
// as Config.ExplanationRate allows, those whose reason changed first, the
// rest left to the next cycles (explanationsBehind). A leader hands the
// groups to its explainer and goes on (explainer.go); otherwise they are
// written before it returns. It returns how many it explained.
func (s *Scheduler) explainAll(ctx context.Context, f *fleet, waiting []placement.Wait,
	pend pendingSet, held *store.Cond, now time.Time) (int, error) {
	var todo, reasons, meanings []placement.Wait
	m := &meaningMemo{}
	seen := f.revisions[s.jobs.Kind()]
	if s.explainer != nil {
		s.explainer.prune(seen)
	}
	for _, w := range waiting {
		it, pf := pend.job(w.Ref, w.Gang)
		switch {
		case it.Object == nil || w.Why == nil || pf.explains(w.Why, m):
		case s.explainer != nil && s.explainer.skip(it.Name):
		case pf.explained == nil:
			todo = append(todo, w)
		case pf.explained.Reason != string(w.Why.Reason):
			reasons = append(reasons, w)
		default:
			meanings = append(meanings, w)
		}
	}
	first := len(todo)
	changed := append(reasons, meanings...)
	n := 0
	for n < len(changed) && s.explainLimit.AllowN(now, 1) {
		n++
	}
	todo = append(todo, changed[:n]...)
	explanationsBehind.Set(float64(len(changed) - n))
	explanationsWritten.WithLabelValues("first").Add(float64(first))
	explanationsWritten.WithLabelValues("changed").Add(float64(n))
	groups := make([][]explainItem, 0, (len(todo)+explainGroup-1)/explainGroup)
	for lo := 0; lo < len(todo); lo += explainGroup {
		ws := todo[lo:min(lo+explainGroup, len(todo))]
		g := make([]explainItem, len(ws))
		for i, w := range ws {
			g[i] = explainItem{job: pend.item(w.Ref, w.Gang), why: *w.Why}
		}
		groups = append(groups, g)
	}
	write := func(ctx context.Context, g []explainItem) (int64, error) {
		return s.explainGroup(ctx, seen, g, held, now)
	}
	if s.explainer != nil {
		s.explainer.start(groups, write)
		return len(todo), nil
	}
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(explainWorkers)
	for _, g := range groups {
		eg.Go(func() error {
			rev, err := write(gctx, g)
			s.wroteAt(rev)
			return err
		})
	}
	return len(todo), eg.Wait()
}

// explainItem is what a group's write needs of one waiting job, taken
// from the cycle's view (which the next cycle fills again) before the
// cycle goes on.
type explainItem struct {
	job store.Item[*v1alpha1.Job] // as cached: its name and revision
	why placement.Unschedulable
}

// explainGroup writes a group's explanations in one transaction, or, when
// that fails, one by one, reading the jobs whole at revision seen (the
// cycle's view of them). It returns the newest revision it wrote at.
func (s *Scheduler) explainGroup(ctx context.Context, seen int64, group []explainItem,
	held *store.Cond, now time.Time) (int64, error) {
	cached := make([]store.Item[*v1alpha1.Job], len(group))
	for i, it := range group {
		cached[i] = it.job
	}
	whole, err := s.wholeJobsAt(ctx, seen, cached)
	if errors.Is(err, store.ErrConflict) {
		return 0, nil // a job deleted since: the next cycle explains the rest
	} else if err != nil {
		return 0, err
	}
	if len(group) > 1 {
		conds, ops := guards(held), make([]store.Op, 0, len(group))
		for i, it := range group {
			c, o, _, err := s.status.Ops(whole[i], jobs.Explain(string(it.why.Reason), it.why.Message, now))
			if err != nil {
				return 0, err
			}
			conds, ops = append(conds, c), append(ops, o)
		}
		rev, err := s.st.Txn(ctx).If(conds...).Then(ops...).Commit()
		if err == nil {
			return rev, nil
		}
		if ctx.Err() != nil {
			return 0, err
		}
		// A job changed, or the group was refused: each on its own.
	}
	newest := int64(0)
	for i, it := range group {
		rev, err := s.explain(ctx, whole[i], &it.why, held, now)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return newest, err
		}
		newest = max(newest, rev)
	}
	return newest, nil
}

// guards is held as the guards of a status write (none when nil).
func guards(held *store.Cond) []store.Cond {
	if held == nil {
		return nil
	}
	return []store.Cond{*held}
}

// preempt asks hub/jobs to mark a running job as preempted, guarded by
// held; hub/dispatch stops it after its grace period and requeues it.
func (s *Scheduler) preempt(ctx context.Context, f *fleet, p placement.Preemption, held *store.Cond, now time.Time) error {
	if it, ok := f.job(p.Victim); ok {
		j, rev, err := s.jobs.Get(ctx, it.Name) // the cache keeps no templates: write the whole
		if err != nil {
			return err
		}
		if it.Object.Status.Phase.Terminal() {
			it.Revision = rev // a finished job still holding its reservation: as it is now
		}
		it.Object = j
		msg := fmt.Sprintf("preempted by job %s; %s to checkpoint. %s", p.Preemptor, p.Grace, p.Reason)
		next, err := s.status.Apply(ctx, it, jobs.MarkPreempted(p.Preemptor, msg, now), guards(held)...)
		if err == nil && next.Revision != it.Revision {
			s.wroteAt(next.Revision)
			preemptions.Inc()
			preemptionLoss.Add(p.GPUHoursLost)
		}
		return err
	}
	return nil
}
