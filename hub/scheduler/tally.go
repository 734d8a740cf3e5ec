// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// jobTally counts a cycle's jobs as its gauges (fleetview.go) and the
// queues' statuses (queuestatus.go) report them. The cycle makes it from
// the jobs' index's counts and its reservations (fleet.countJobs), so that
// a fleet of 100,000 jobs is not walked per cycle, nor once more per
// reader, and moves the jobs it placed from pending to active (placed).
type jobTally struct {
	// phases counts the jobs by phase (no phase counts as Pending),
	// finished ones included.
	phases map[v1alpha1.JobPhase]int
	queues map[string]*queueTally
	// last is the queue last asked for (queue) and lastQ its name: the
	// reservations of a queue tend to come together.
	last  *queueTally
	lastQ string
}

// queueTally is one queue's jobs: booked (active, holding heldGPUs), and
// pending without a reservation — pending those in phase Pending (the
// queue's status), waiting those too with no phase yet (the gauges), with
// their GPUs.
type queueTally struct {
	active, heldGPUs, pending, waiting, waitingGPUs int
}

// countJobs is the tally of f's jobs: every job by phase, and per queue
// of unfinished jobs (and of reservations' jobs) its pending jobs,
// before booked takes the reservations' out of them.
func (f *fleet) countJobs() *jobTally {
	t := &jobTally{phases: make(map[v1alpha1.JobPhase]int, len(f.finished)+len(f.phases)),
		queues: make(map[string]*queueTally, len(f.queueCounts))}
	for phase, n := range f.finished {
		t.phases[phase] += n
	}
	for phase, n := range f.phases {
		t.phases[phase] += n
	}
	for name, q := range f.queueCounts {
		t.queues[name] = &queueTally{pending: q.pendingPhased, waiting: q.waiting, waitingGPUs: q.waitingGPUs}
	}
	for name, h := range f.held {
		q := t.queue(name)
		q.active += h.active
		q.heldGPUs += h.heldGPUs
		q.pending += h.pending
		q.waiting += h.waiting
		q.waitingGPUs += h.waitingGPUs
	}
	return t
}

func (t *jobTally) queue(name string) *queueTally {
	if t.last != nil && t.lastQ == name {
		return t.last
	}
	q := t.queues[name]
	if q == nil {
		q = &queueTally{}
		t.queues[name] = q
	}
	t.last, t.lastQ = q, name
	return q
}

// book counts (sign 1) a job holding a reservation of gpus GPUs as its
// queue's active job and not as pending, or takes that back (sign -1).
func (q *queueTally) book(a *activeJob, gpus, sign int) {
	q.active += sign
	q.heldGPUs += sign * gpus
	if pf := a.pending; pf != nil {
		q.waiting -= sign
		q.waitingGPUs -= sign * pf.gpus
		if a.phase == v1alpha1.JobPending {
			q.pending -= sign
		}
	}
}

// placed moves the jobs a cycle booked (pending ones) from pending to
// active and to phase Placed.
func (t *jobTally) placed(placed []store.Item[*v1alpha1.Job]) {
	for _, it := range placed {
		j := it.Object
		if j == nil {
			continue
		}
		q := t.queue(j.Spec.Queue)
		q.active++
		q.pending--
		q.waiting--
		g := GangOf(j)
		q.waitingGPUs -= g.GPUs()
		t.phases[v1alpha1.JobPending]--
		t.phases[v1alpha1.JobPlaced]++
	}
}

// held is the GPUs each queue with a reservation holds (FairShare.Advance).
func (t *jobTally) held() map[string]int {
	held := map[string]int{}
	for name, q := range t.queues {
		if q.active > 0 {
			held[name] = q.heldGPUs
		}
	}
	return held
}
