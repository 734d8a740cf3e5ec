// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"sync"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// DefaultMaxPreparingMembers is Config.MaxPreparingMembers' default.
const DefaultMaxPreparingMembers = 2048

// admission bounds the members of the gangs preparing at once
// (Config.MaxPreparingMembers). Each member's prepare is several writes to
// the hub cluster's API server and to its workload cluster's; a flood of
// placements (a fleet emptied at once, a hub started on a full queue)
// started whole would have every gang miss its prepare deadline together
// and be aborted, placed again and started again. A gang refused a slot
// keeps its reservation and waits, in the order of its refusals, until
// the gangs before it have committed or been aborted; a gang larger than
// the whole limit starts when none other is preparing.
//
// It is derived state: every reconcile tells it whether its job is
// preparing (track), so a leadership that starts on gangs already
// preparing counts them as its first sweep reaches them.
type admission struct {
	mu  sync.Mutex
	max int
	// used is the sum of preparing.
	used      int
	preparing map[string]int
	// waiting are the jobs refused a slot, in the order of their first
	// refusal; queued marks them.
	waiting []string
	queued  map[string]bool
	// requeue queues a job for a worker (nil: Pass driven by hand, whose
	// next pass reads every job anyway).
	requeue func(string)
}

func newAdmission(limit int) *admission {
	return &admission{max: limit, preparing: map[string]int{}, queued: map[string]bool{}}
}

// reset forgets everything (a new leadership) and sets the requeue func.
func (a *admission) reset(requeue func(string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.used, a.preparing, a.waiting, a.queued, a.requeue = 0, map[string]int{}, nil, map[string]bool{}, requeue
}

// admit says whether job's gang of n members may start preparing now; a
// gang already preparing may. A refused gang waits for a freed slot.
func (a *admission) admit(job string, n int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.preparing[job]; ok {
		return true
	}
	if a.used == 0 || a.used+n <= a.max && (len(a.waiting) == 0 || a.waiting[0] == job) {
		a.preparing[job] = n
		a.used += n
		a.drop(job)
		preparingMembers.Set(float64(a.used))
		a.next() // the next in line may fit too
		return true
	}
	if !a.queued[job] {
		a.queued[job] = true
		a.waiting = append(a.waiting, job)
		waitingGangs.Set(float64(len(a.waiting)))
	}
	return false
}

// next queues the gang first in line, when there is one and room.
func (a *admission) next() {
	if len(a.waiting) > 0 && a.used < a.max && a.requeue != nil {
		a.requeue(a.waiting[0])
	}
}

// drop removes job from the line.
func (a *admission) drop(job string) {
	if !a.queued[job] {
		return
	}
	delete(a.queued, job)
	for i, w := range a.waiting {
		if w == job {
			a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
			break
		}
	}
	waitingGangs.Set(float64(len(a.waiting)))
}

// done records, after a reconcile of job, that it prepares n members (0:
// committed, aborted, torn down, gone) or, with waiting, that admit
// refused it. A freed slot, or a new gang first in line, queues the gang
// first in line; a reconcile that changes neither (most: the jobs that
// never prepared) queues nothing, where each reconcile of any job queued
// the first in line again to be refused again.
func (a *admission) done(job string, n int, waiting bool) {
	if waiting {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	used, first := a.used, a.first()
	had, ok := a.preparing[job]
	switch {
	case n > 0:
		a.preparing[job] = n
		a.used += n - had
	case ok:
		delete(a.preparing, job)
		a.used -= had
	}
	a.drop(job)
	preparingMembers.Set(float64(a.used))
	if a.used < used || a.first() != first {
		a.next()
	}
}

// first is the gang first in line ("" for none).
func (a *admission) first() string {
	if len(a.waiting) == 0 {
		return ""
	}
	return a.waiting[0]
}

// preparingNow is how many members job prepares after this pass: its
// reservation's members when the pass decided, or left, its dispatch in
// Preparing; 0 otherwise.
func preparingNow(s *scope) int {
	if s.res == nil || s.job.Object == nil || s.teardown != nil {
		return 0
	}
	phase := v1alpha1.DispatchPhase("")
	if s.decision != nil {
		phase = s.decision.Dispatch.Phase
	} else if c := current(s); c != nil {
		phase = c.Phase
	}
	if phase != v1alpha1.DispatchPreparing {
		return 0
	}
	return len(s.res.Members)
}
