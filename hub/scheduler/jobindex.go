// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"maps"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
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
	// finished counts the finished jobs by phase, phases the unfinished
	// ones (no phase counts as Pending).
	finished map[v1alpha1.JobPhase]int
	phases   map[v1alpha1.JobPhase]int
	// queues counts each queue's unfinished jobs (jobs) and, of the
	// pending ones, waiting, waitingGPUs and pending as queueTally has
	// them before reservations are joined.
	queues map[string]*queueCount
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

// reset empties the index (a relist).
func (x *jobIndex) reset() {
	x.active, x.pending, x.pendingAt = map[string]*activeJob{}, nil, map[string]int{}
	x.finished, x.phases, x.queues = map[v1alpha1.JobPhase]int{}, map[v1alpha1.JobPhase]int{}, map[string]*queueCount{}
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
	if cur != nil {
		if p := cur.Object.job.Status.Phase; p.Terminal() {
			x.finished[p]++
		} else {
			x.add(activeOf(*cur))
		}
	}
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
// snapshot has no job of that name).
type bookedJob struct {
	job *activeJob
	res store.Item[*ledger.Reservation]
}

// take fills f from the index (under the jobs cache's lock, and the
// reservations' when reservations is the cache's): the pending jobs, each
// reservation with its job (active, or finished and still in the cache:
// items), and the jobs' counts.
func (x *jobIndex) take(f *fleet, items map[string]store.Item[*cachedJob], reservations map[string]store.Item[*ledger.Reservation]) {
	f.pendingJobs = append(make([]*activeJob, 0, len(x.pending)), x.pending...)
	f.booked = make([]bookedJob, 0, len(reservations))
	for name, res := range reservations {
		a := x.active[name]
		if a == nil {
			if it, ok := items[name]; ok {
				a = activeOf(it) // a finished job still holding its reservation
			}
		}
		f.booked = append(f.booked, bookedJob{job: a, res: res})
	}
	f.finished = maps.Clone(x.finished)
	f.phases = maps.Clone(x.phases)
	f.queueCounts = make(map[string]queueCount, len(x.queues))
	for name, q := range x.queues {
		f.queueCounts[name] = *q
	}
}
