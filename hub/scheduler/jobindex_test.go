// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestJobIndexCountsAsARecount: after any sequence of jobs created,
// changed (phase, queue, shape) and deleted, and reservations created,
// changed and deleted among them (and either kind listed anew), the
// index's pending array and counts, the reservations it joins with their
// jobs, and the tally a cycle makes of them equal a count made afresh
// over every job as the cycle used to make it.
func TestJobIndexCountsAsARecount(t *testing.T) {
	phases := []v1alpha1.JobPhase{"", v1alpha1.JobPending, v1alpha1.JobPlaced, v1alpha1.JobRunning,
		v1alpha1.JobSucceeded, v1alpha1.JobFailed}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		x := newJobIndex()
		// mirror is the reservations with their jobs as a cycle's snapshot
		// builder holds them: changed at each take only by what the take
		// says changed since the one before (runningChanges), or taken
		// whole when it cannot say.
		mirror := map[string]bookedJob{}
		var last takeID
		var items map[string]store.Item[*cachedJob]
		take := func(f *fleet) {
			x.take(f, items)
			rc := f.running
			if !rc.valid || rc.since != last {
				clear(mirror)
				for _, b := range f.booked {
					mirror[b.res.Name] = b
				}
			} else {
				for _, name := range rc.goneNames {
					delete(mirror, name)
				}
				for _, i := range rc.at {
					mirror[f.booked[i].res.Name] = f.booked[i]
				}
			}
			last = rc.took
			if len(mirror) != len(f.booked) {
				t.Fatalf("seed %d: %d reservations after the changes, %d taken", seed, len(mirror), len(f.booked))
			}
			for _, b := range f.booked {
				if m := mirror[b.res.Name]; m.res.Revision != b.res.Revision || m.job != b.job || m.form != b.form {
					t.Fatalf("seed %d: reservation %s after the changes: revision %d, job %p; taken %d, %p",
						seed, b.res.Name, m.res.Revision, m.job, b.res.Revision, b.job)
				}
			}
		}
		items = map[string]store.Item[*cachedJob]{}
		res := map[string]store.Item[*ledger.Reservation]{}
		relist := func() {
			// Either cache listed anew: reset, then every item again.
			if rng.IntN(2) == 0 {
				for name := range items { // deleted while no watch ran: no change seen
					if rng.IntN(4) == 0 {
						delete(items, name)
					}
				}
				x.reset()
				for _, name := range slices.Sorted(maps.Keys(items)) {
					it := items[name]
					x.change(name, nil, &it)
				}
				return
			}
			x.reservationsReset()
			for _, name := range slices.Sorted(maps.Keys(res)) {
				it := res[name]
				x.reservationChange(name, nil, &it)
			}
		}
		for step := range 400 {
			name := fmt.Sprintf("j%02d", rng.IntN(60))
			switch rng.IntN(8) {
			case 0: // a reservation for the job, created, changed or deleted
				old, had := res[name]
				if had && rng.IntN(3) == 0 {
					x.reservationChange(name, &old, nil)
					delete(res, name)
					continue
				}
				r := &ledger.Reservation{Job: name}
				r.Gang.Queue, r.Gang.Members, r.Gang.GPUsPerMember = "q0", 1, 1+rng.IntN(8)
				cur := store.Item[*ledger.Reservation]{Name: name, Object: r, Revision: int64(step + 1)}
				if had {
					x.reservationChange(name, &old, &cur)
				} else {
					x.reservationChange(name, nil, &cur)
				}
				res[name] = cur
				continue
			case 1:
				if rng.IntN(20) == 0 {
					relist()
				}
				if rng.IntN(10) == 0 { // a cycle takes the index mid-way
					take(&fleet{ledger: ledger.NewBookingState(1, nil)})
				}
				continue
			}
			old, had := items[name]
			if had && rng.IntN(5) == 0 {
				x.change(name, &old, nil)
				delete(items, name)
				continue
			}
			j := testjob.New(name).Queue(fmt.Sprintf("q%d", rng.IntN(3))).Members(1 + rng.Int32N(4)).GPUs(1 + rng.Int32N(8)).Obj()
			j.Status.Phase = phases[rng.IntN(len(phases))]
			// Priorities and submission times of a few values, so that
			// the pending order's every key decides some pairs.
			j.Spec.PriorityClass = []v1alpha1.PriorityClass{v1alpha1.PriorityBatch, v1alpha1.PriorityProduction, v1alpha1.PrioritySpot}[rng.IntN(3)]
			at := v1alpha1.NewMicroTime(time.Unix(1_700_000_000+rng.Int64N(3), 0))
			j.Status.SubmitTime = &at
			if rng.IntN(4) == 0 {
				j.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionPreempted, Status: metav1.ConditionTrue}}
				j.Annotations = map[string]string{v1alpha1.AnnotationPreemptedBy: "other"}
			}
			cur := store.Item[*cachedJob]{Name: name, Object: newCachedJob(j), Revision: int64(step + 1)}
			if had {
				x.change(name, &old, &cur)
			} else {
				x.change(name, nil, &cur)
			}
			items[name] = cur
		}
		f := &fleet{ledger: ledger.NewBookingState(1, nil)}
		take(f)
		if len(f.booked) != len(res) {
			t.Fatalf("seed %d: %d reservations joined, want %d", seed, len(f.booked), len(res))
		}
		got := f.countJobs() // with the sums the join kept of its jobs (held)
		// What the join kept of the reservations' jobs, as a cycle counted
		// it from every entry before.
		terminating, reservedPending := map[string]string{}, map[string]bool{}
		for _, b := range f.booked {
			if a := b.job; a != nil && a.preempted {
				terminating[a.Name] = a.preemptedBy
			}
			if a := b.job; a != nil && a.pending != nil {
				reservedPending[a.Name] = true
			}
		}
		if !maps.Equal(f.terminating, terminating) || !maps.Equal(f.reservedPending, reservedPending) {
			t.Fatalf("seed %d: terminating %v and reserved pending %v kept; counted %v and %v", seed,
				f.terminating, f.reservedPending, terminating, reservedPending)
		}
		want := recount(items, res)
		if !maps.Equal(nonZero(got.phases), nonZero(want.phases)) {
			t.Fatalf("seed %d: phases %v, want %v", seed, got.phases, want.phases)
		}
		for _, q := range slices.Sorted(maps.Keys(want.queues)) {
			g, w := got.queues[q], want.queues[q]
			if g == nil || *g != *w {
				t.Fatalf("seed %d: queue %s: %+v, want %+v", seed, q, g, w)
			}
		}
		if len(got.queues) != len(want.queues) {
			t.Fatalf("seed %d: queues %v, want %v", seed, slices.Sorted(maps.Keys(got.queues)), slices.Sorted(maps.Keys(want.queues)))
		}
		var pending, wantPending []string
		for _, a := range f.pendingJobs {
			pending = append(pending, a.Name)
			if items[a.Name].Revision != a.Revision {
				t.Fatalf("seed %d: pending %s at revision %d, cached at %d", seed, a.Name, a.Revision, items[a.Name].Revision)
			}
		}
		for name, it := range items {
			if p := it.Object.job.Status.Phase; p == "" || p == v1alpha1.JobPending {
				wantPending = append(wantPending, name)
			}
		}
		// The engine's order: it then skips its sort (sortPending).
		for i := 1; i < len(f.pendingJobs); i++ {
			a, b := f.pendingJobs[i-1], f.pendingJobs[i]
			if placement.ComparePending(&a.pending.gang, &b.pending.gang) > 0 {
				t.Fatalf("seed %d: pending %s (priority %d, submitted %v) before %s (priority %d, submitted %v)", seed,
					a.Name, a.pending.gang.Priority, a.pending.gang.Submitted, b.Name, b.pending.gang.Priority, b.pending.gang.Submitted)
			}
		}
		slices.Sort(pending)
		slices.Sort(wantPending)
		if !slices.Equal(pending, wantPending) {
			t.Fatalf("seed %d: pending %v, want %v", seed, pending, wantPending)
		}
		seen := map[string]bool{}
		for _, b := range f.booked {
			if seen[b.res.Name] {
				t.Fatalf("seed %d: reservation %s joined twice", seed, b.res.Name)
			}
			seen[b.res.Name] = true
			if r, ok := res[b.res.Name]; !ok || r.Revision != b.res.Revision {
				t.Fatalf("seed %d: reservation %s at revision %d joined; stored %v at %d", seed, b.res.Name, b.res.Revision, ok, r.Revision)
			}
			it, ok := items[b.res.Name]
			if ok != (b.job != nil) || ok && (b.job.Revision != it.Revision || b.job.preempted != jobs.Preempted(it.Object.job)) {
				t.Fatalf("seed %d: reservation %s joined with %+v; cached %v", seed, b.res.Name, b.job, ok)
			}
		}
	}
}

// recount is the tally counted job by job, as a cycle counted it before
// the index kept its counts: every job by phase; per queue of an
// unfinished job or a reservation's job, a job with a reservation as
// active (with its GPUs), a pending one without as waiting (and pending
// when its phase is Pending).
func recount(items map[string]store.Item[*cachedJob], res map[string]store.Item[*ledger.Reservation]) *jobTally {
	t := &jobTally{phases: map[v1alpha1.JobPhase]int{}, queues: map[string]*queueTally{}}
	for name, it := range items {
		j := it.Object.job
		t.phases[phaseCounted(j.Status.Phase)]++
		r, booked := res[name]
		if j.Status.Phase.Terminal() && !booked {
			continue
		}
		q := t.queue(j.Spec.Queue)
		switch p := j.Status.Phase; {
		case booked:
			q.active++
			q.heldGPUs += r.Object.Gang.GPUs()
		case p == "" || p == v1alpha1.JobPending:
			q.waiting++
			g := GangOf(j)
			q.waitingGPUs += g.GPUs()
			if p == v1alpha1.JobPending {
				q.pending++
			}
		}
	}
	return t
}

func nonZero(m map[v1alpha1.JobPhase]int) map[v1alpha1.JobPhase]int {
	out := map[v1alpha1.JobPhase]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
