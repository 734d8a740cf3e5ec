// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// jobTally counts a cycle's jobs as its gauges (fleetview.go) and the
// queues' statuses (queuestatus.go) report them. The cycle counts them in
// the pass that builds its placement input (input), so that a fleet of
// 25,000 placed jobs is not walked once more per reader, and moves the
// jobs it placed from pending to active (placed).
type jobTally struct {
	// phases counts the snapshot's jobs by phase (no phase counts as
	// Pending), and the finished jobs it leaves out.
	phases map[v1alpha1.JobPhase]int
	queues map[string]*queueTally
	// last is the queue last counted (jobs of a queue tend to follow one
	// another), counts the phases' counts while counting.
	last   *queueTally
	lastQ  string
	counts []phaseCount
}

type phaseCount struct {
	phase v1alpha1.JobPhase
	n     int
}

// queueTally is one queue's jobs: booked (active), and pending without a
// reservation — pending those in phase Pending (the queue's status),
// waiting those too with no phase yet (the gauges), with their GPUs.
type queueTally struct {
	active, pending, waiting, waitingGPUs int
}

func newJobTally(finished map[v1alpha1.JobPhase]int) *jobTally {
	t := &jobTally{phases: map[v1alpha1.JobPhase]int{}, queues: map[string]*queueTally{}}
	for phase, n := range finished {
		t.phases[phase] += n
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

// phase counts a job of a phase (phases holds the counts once done).
func (t *jobTally) phase(p v1alpha1.JobPhase) {
	for i := range t.counts {
		if t.counts[i].phase == p {
			t.counts[i].n++
			return
		}
	}
	t.counts = append(t.counts, phaseCount{p, 1})
}

// done adds the phases counted to phases.
func (t *jobTally) done() {
	for _, c := range t.counts {
		t.phases[c.phase] += c.n
	}
	t.counts = nil
}

// count adds a job of the snapshot; booked says it holds a reservation,
// gpus are its gang's GPUs (read only for a pending job). done ends the
// counting.
func (t *jobTally) count(j *v1alpha1.Job, booked bool, gpus int) {
	phase := j.Status.Phase
	if phase == "" {
		phase = v1alpha1.JobPending
	}
	t.phase(phase)
	q := t.queue(j.Spec.Queue)
	switch {
	case booked:
		q.active++
	case phase == v1alpha1.JobPending:
		q.waiting++
		q.waitingGPUs += gpus
		if j.Status.Phase == v1alpha1.JobPending {
			q.pending++
		}
	}
}

// placed moves the jobs a cycle booked (pending ones, in byName) from
// pending to active and to phase Placed.
func (t *jobTally) placed(names []string, byName map[string]store.Item[*v1alpha1.Job]) {
	for _, name := range names {
		it, ok := byName[name]
		if !ok {
			continue
		}
		j := it.Object
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
