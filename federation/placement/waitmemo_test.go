// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestWaitMemoEquivalence runs the same cycles on twin snapshots, with the
// classes of waiting gangs (waitmemo.go) on and off, over random fleets and
// many gangs of few shapes (so that classes repeat), with estimates,
// reservations, preemptions and departures between cycles, explanations on
// and off: every decision must be the same, and the classes must answer
// for some gangs. The side with classes passes an earlier decision's waits
// as its WaitBuffer, as the hub does: the decision must be written there
// when it has room, and be the same.
func TestWaitMemoEquivalence(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	hits := 0
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			hits += runWaitMemo(t, uint64(seed))
		})
	}
	t.Logf("%d waiting gangs answered by their class", hits)
	if hits == 0 {
		t.Errorf("no waiting gang was answered by its class")
	}
}

func runWaitMemo(t *testing.T, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 17))
	fleet := randomFleet(rng)
	on, off := NewSnapshot(fleet, nil), NewSnapshot(fleet, nil)
	opts := []Option{WithPreemptAfter(time.Minute)}
	if seed%3 == 1 {
		opts = append(opts, WithoutExplanations())
	}
	if seed%3 == 2 {
		opts = append(opts, WithReclaim(), WithReservations(4, 1, 0.5))
	}
	// A few shapes, each repeated by several gangs.
	var shapes []Gang
	for i := range 2 + rng.IntN(4) {
		g := randomGang(rng, i, t0)
		shapes = append(shapes, g)
		if g.Products == nil && rng.IntN(2) == 0 {
			g.Products = []string{} // fits as nil Products does, but is explained otherwise
			shapes = append(shapes, g)
		}
	}
	var pending []Gang
	next, hits := 0, 0
	var res []Reservation
	var waits []Wait // the largest decision's waits, passed as WaitBuffer
	terminating := map[string]string{}
	now := t0.Add(time.Hour)
	for cycle := range 6 {
		for range 5 + rng.IntN(30) {
			g := shapes[rng.IntN(len(shapes))]
			g.ID = fmt.Sprintf("m%04d", next)
			g.Submitted = now.Add(-time.Duration(rng.IntN(7200)) * time.Second)
			g.Priority = []int32{PriorityDevelopment, PriorityBatch, PriorityProduction}[rng.IntN(3)]
			if rng.IntN(2) == 0 {
				g.Estimate = time.Duration(1+rng.IntN(180)) * time.Minute
			}
			pending = append(pending, g)
			next++
		}
		in := Input{Now: now, Pending: pending, Reservations: res, Terminating: terminating,
			Queues: []Queue{{Name: "a", Weight: 2, Quotas: map[string]Quota{"": {Nominal: 40}}}, {Name: "b"}}}
		memoWaits = false
		want := Schedule(off, in, opts...)
		memoWaits = true
		before := memoHits.Load()
		buf := waits
		inOn := in
		inOn.WaitBuffer = buf // the last decision's, as the hub passes it
		got := Schedule(on, inOn, opts...)
		hits += int(memoHits.Load() - before)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cycle %d: decisions differ with classes of waiting gangs:\n%+v\nwithout:\n%+v", cycle, got, want)
		}
		if cap(buf) >= len(in.Pending) && len(got.Waiting) > 0 && &got.Waiting[0] != &buf[:1][0] {
			t.Fatalf("cycle %d: the decision's waits are not in the WaitBuffer with room for them", cycle)
		}
		if cap(got.Waiting) > cap(waits) {
			waits = got.Waiting
		}
		placed := placedIDs(got)
		var still []Gang
		for _, g := range pending {
			if !placed[g.ID] {
				still = append(still, g)
			}
		}
		pending = still
		for _, p := range got.Preemptions {
			terminating[p.Victim] = p.Preemptor
		}
		for _, a := range on.Running() {
			if _, term := terminating[a.Gang.ID]; term || rng.IntN(4) == 0 {
				mustRelease(t, on, off, a.Gang.ID)
				delete(terminating, a.Gang.ID)
			}
		}
		res = got.Reservations
		now = now.Add(10 * time.Minute)
	}
	return hits
}
