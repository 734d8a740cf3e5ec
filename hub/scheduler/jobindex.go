// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"maps"
	"slices"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// jobIndex is the scheduler's index of the cached jobs, kept as each job
// changes (under caches.jobs.mu): the unfinished jobs by name, the pending
// ones (phase Pending or none) also in an array, and the jobs' counts by
// phase and by queue. A cycle takes the pending array and the counts as
// they are and joins only the reservations with their jobs (take), so
// that its work grows with the pending gangs and the reservations, not
// with every job: at 100,000 jobs a pass that visited each job's entries
// cost tens of milliseconds a cycle (docs/scale.md).
type jobIndex struct {
	active map[string]*activeJob
	// pending holds the active jobs with a pending form, in no order;
	// pendingAt is each one's place in it.
	pending   []*activeJob
	pendingAt map[string]int
	// order is the pending jobs in the order the engine decides them
	// (placement.ComparePending) as of the last take; added are the
	// pending jobs added since, gone those removed since: take merges
	// them in, so that a cycle hands the engine its gangs in order
	// without sorting them all (the engine checks the order and skips
	// its sort).
	order []*activeJob
	added []*activeJob
	gone  map[*activeJob]struct{}
	// finished counts the finished jobs by phase, phases the unfinished
	// ones (no phase counts as Pending).
	finished map[v1alpha1.JobPhase]int
	phases   map[v1alpha1.JobPhase]int
	// queues counts each queue's unfinished jobs (jobs) and, of the
	// pending ones, waiting, waitingGPUs and pending as queueTally has
	// them before reservations are joined.
	queues map[string]*queueCount
	// join is the reservations joined with their jobs.
	join reservationJoin
}

// reservationChange is the reservations cache's index func: a
// reservation's old and new item (each nil when absent).
func (x *jobIndex) reservationChange(name string, _, cur *store.Item[*ledger.Reservation]) {
	j := &x.join
	j.mu.Lock()
	defer j.mu.Unlock()
	i, ok := j.at[name]
	switch {
	case cur == nil && ok:
		j.note(name, &j.entries[i])
		j.count(&j.entries[i], -1)
		last := len(j.entries) - 1
		j.entries[i] = j.entries[last]
		j.at[j.entries[i].res.Name] = i
		j.entries[last] = bookedJob{}
		j.entries = j.entries[:last]
		delete(j.at, name)
		delete(j.unjoined, name)
		j.touch(i)
	case cur == nil:
	case ok:
		e := bookedOf(*cur)
		e.job = j.entries[i].job // the same job
		j.put(i, e)
		j.note(name, nil)
	default:
		j.note(name, nil)
		j.at[name] = len(j.entries)
		j.touch(len(j.entries))
		j.entries = append(j.entries, bookedOf(*cur)) // no job yet: counts nothing
		j.unjoined[name] = struct{}{}
	}
}

// reservationsReset empties the join (the reservations are listed anew).
func (x *jobIndex) reservationsReset() {
	j := &x.join
	j.mu.Lock()
	j.entries, j.at, j.unjoined, j.all = nil, map[string]int{}, map[string]struct{}{}, false
	j.held, j.terminating, j.reservedPending = nil, nil, nil
	j.emptied = true
	clear(j.changed)
	clear(j.gone)
	j.mu.Unlock()
}

// joined is the job a reservation of job name joins (under the jobs
// cache's lock): the active job, or a finished one still in the cache
// (items), or nil.
func (x *jobIndex) joined(name string, items map[string]store.Item[*cachedJob]) *activeJob {
	if a := x.active[name]; a != nil {
		return a
	}
	if it, ok := items[name]; ok {
		return activeOf(it) // a finished job still holding its reservation
	}
	return nil
}

// queueCount is one queue's unfinished jobs as jobIndex counts them.
type queueCount struct {
	jobs                                int
	waiting, waitingGPUs, pendingPhased int
}

// activeJob is an unfinished job as jobIndex keeps it, or a finished one
// a snapshot joins with its reservation: the job and inline what a cycle
// reads of it (its phase, queue, whether it is being preempted and by
// whom, and a pending job's form). An activeJob is never changed once
// made: a job's change makes a new one.
type activeJob struct {
	store.Item[*v1alpha1.Job]
	phase v1alpha1.JobPhase
	queue string
	// preempted says the job has Preempted=True; preemptedBy is its
	// preemptor (the annotation).
	preempted   bool
	preemptedBy string
	// pending is the job's pending form (nil: the job is not pending).
	pending *pendingForm
	// committed is when its dispatch committed (zero: it has not);
	// checkpointAt and checkpointEvery its latest checkpoint's time and
	// interval (zero: none).
	committed       time.Time
	checkpointAt    time.Time
	checkpointEvery time.Duration
}

// activeOf is a cached job's activeJob.
func activeOf(it store.Item[*cachedJob]) *activeJob {
	j := it.Object.job
	a := &activeJob{Item: store.Item[*v1alpha1.Job]{Name: it.Name, Object: j, Revision: it.Revision},
		phase: j.Status.Phase, queue: j.Spec.Queue, pending: it.Object.pending,
		preempted: jobs.Preempted(j)}
	if a.preempted {
		a.preemptedBy = j.Annotations[v1alpha1.AnnotationPreemptedBy]
	}
	if d := jobs.DispatchOf(j); d != nil && d.Phase == v1alpha1.DispatchCommitted && d.Time != nil {
		a.committed = d.Time.Time
	}
	if c := j.Status.Checkpoint; c != nil {
		a.checkpointAt, a.checkpointEvery = c.Time.Time, time.Duration(c.IntervalSeconds)*time.Second
	}
	return a
}

func newJobIndex() *jobIndex {
	x := &jobIndex{}
	x.reset()
	return x
}

// reset empties the index (a relist of the jobs); the reservations'
// join keeps its reservations and looks up every job again at the next
// take.
func (x *jobIndex) reset() {
	x.active, x.pending, x.pendingAt = map[string]*activeJob{}, nil, map[string]int{}
	x.order, x.added, x.gone = nil, nil, map[*activeJob]struct{}{}
	x.finished, x.phases, x.queues = map[v1alpha1.JobPhase]int{}, map[v1alpha1.JobPhase]int{}, map[string]*queueCount{}
	j := &x.join
	j.mu.Lock()
	if j.at == nil {
		j.at, j.unjoined = map[string]int{}, map[string]struct{}{}
	}
	j.all = true
	j.mu.Unlock()
}

// change is the watched cache's index func: a job's old and new item
// (each nil when absent).
func (x *jobIndex) change(name string, old, cur *store.Item[*cachedJob]) {
	if old != nil {
		if p := old.Object.job.Status.Phase; p.Terminal() {
			x.finished[p]--
		} else if a := x.active[name]; a != nil {
			x.remove(a)
		}
	}
	var a *activeJob
	if cur != nil {
		if p := cur.Object.job.Status.Phase; p.Terminal() {
			x.finished[p]++
		} else {
			a = activeOf(*cur)
			x.add(a)
		}
	}
	j := &x.join
	j.mu.Lock()
	if i, ok := j.at[name]; ok {
		if a == nil && cur != nil {
			a = activeOf(*cur) // a finished job still holding its reservation
		}
		e := j.entries[i]
		e.job = a
		j.put(i, e)
		j.note(name, nil)
		delete(j.unjoined, name)
	}
	j.mu.Unlock()
}

func (x *jobIndex) add(a *activeJob) {
	x.active[a.Name] = a
	x.phases[phaseCounted(a.phase)]++
	q := x.queues[a.queue]
	if q == nil {
		q = &queueCount{}
		x.queues[a.queue] = q
	}
	q.jobs++
	if pf := a.pending; pf != nil {
		x.pendingAt[a.Name] = len(x.pending)
		x.pending = append(x.pending, a)
		x.added = append(x.added, a)
		q.waiting++
		q.waitingGPUs += pf.gpus
		if a.phase == v1alpha1.JobPending {
			q.pendingPhased++
		}
	}
}

func (x *jobIndex) remove(a *activeJob) {
	delete(x.active, a.Name)
	x.phases[phaseCounted(a.phase)]--
	q := x.queues[a.queue]
	q.jobs--
	if pf := a.pending; pf != nil {
		i := x.pendingAt[a.Name]
		last := len(x.pending) - 1
		x.pending[i] = x.pending[last]
		x.pendingAt[x.pending[i].Name] = i
		x.pending[last] = nil
		x.pending = x.pending[:last]
		delete(x.pendingAt, a.Name)
		x.gone[a] = struct{}{}
		q.waiting--
		q.waitingGPUs -= pf.gpus
		if a.phase == v1alpha1.JobPending {
			q.pendingPhased--
		}
	}
	if q.jobs == 0 {
		delete(x.queues, a.queue)
	}
}

// phaseCounted is the phase a job counts under: no phase counts as Pending.
func phaseCounted(p v1alpha1.JobPhase) v1alpha1.JobPhase {
	if p == "" {
		return v1alpha1.JobPending
	}
	return p
}

// bookedJob is a reservation of a snapshot with its job (nil: the
// snapshot has no job of that name), and what a cycle reads of the
// reservation, made once per revision (bookedOf): its gang's GPUs and
// its running gang for the placement snapshot, whose times and Counted a
// cycle sets in place (fleet.allocation; placement.Builder reads them in
// place, and keeps what it counted of a gang while the pointer stays).
type bookedJob struct {
	job  *activeJob
	res  store.Item[*ledger.Reservation]
	gpus int
	form *placement.Allocation
}

// bookedOf is a reservation's entry of the join, without its job.
func bookedOf(it store.Item[*ledger.Reservation]) bookedJob {
	r := it.Object
	a := &placement.Allocation{Gang: r.PlacementGang(), Assignments: r.PlacementAssignments()}
	return bookedJob{res: it, gpus: a.Gang.GPUs(), form: a}
}

// take fills f from the index (under the jobs cache's lock and the
// reservations'): the pending jobs, each reservation with its job
// (active, or finished and still in the cache: items), and the jobs'
// counts. Only the reservations new since the last take (or every one,
// after the jobs were listed anew) look their job up.
func (x *jobIndex) take(f *fleet, items map[string]store.Item[*cachedJob]) {
	f.pendingJobs = slices.Clone(x.ordered())
	j := &x.join
	j.mu.Lock()
	if j.all {
		for i := range j.entries {
			e := j.entries[i]
			e.job = x.joined(e.res.Name, items)
			j.put(i, e)
			j.note(e.res.Name, nil)
		}
		j.all = false
		clear(j.unjoined)
	}
	for name := range j.unjoined {
		i := j.at[name]
		e := j.entries[i]
		e.job = x.joined(name, items)
		j.put(i, e)
		j.note(name, nil)
	}
	clear(j.unjoined)
	f.booked = j.copyOut()
	f.running = j.changes()
	f.held = make(map[string]queueTally, len(j.held))
	for name, q := range j.held {
		f.held[name] = *q
	}
	f.terminating = maps.Clone(j.terminating)
	if len(j.reservedPending) > 0 { // rare: nil lets the input skip a lookup per pending job
		f.reservedPending = make(map[string]bool, len(j.reservedPending))
		for name := range j.reservedPending {
			f.reservedPending[name] = true
		}
	}
	j.mu.Unlock()
	f.finished = maps.Clone(x.finished)
	f.phases = maps.Clone(x.phases)
	f.queueCounts = make(map[string]queueCount, len(x.queues))
	for name, q := range x.queues {
		f.queueCounts[name] = *q
	}
}

// ordered brings order up to date (the jobs gone since the last call
// dropped, those added merged in at their places) and returns it.
func (x *jobIndex) ordered() []*activeJob {
	if len(x.gone) > 0 {
		isGone := func(a *activeJob) bool { _, ok := x.gone[a]; return ok }
		x.order = slices.DeleteFunc(x.order, isGone)
		x.added = slices.DeleteFunc(x.added, isGone)
		clear(x.gone)
	}
	if len(x.added) == 0 {
		return x.order
	}
	slices.SortFunc(x.added, comparePendingJobs)
	merged := make([]*activeJob, 0, len(x.order)+len(x.added))
	rest := x.order
	for _, a := range x.added {
		// Each added job's place among the rest: a binary search, so
		// that a few new jobs among 35,000 compare a few dozen times.
		i, _ := slices.BinarySearchFunc(rest, a, comparePendingJobs)
		merged = append(append(merged, rest[:i]...), a)
		rest = rest[i:]
	}
	x.order, x.added = append(merged, rest...), x.added[:0]
	return x.order
}

// comparePendingJobs orders pending jobs as the engine decides their gangs.
func comparePendingJobs(a, b *activeJob) int {
	return placement.ComparePending(&a.pending.gang, &b.pending.gang)
}
