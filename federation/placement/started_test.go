// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestNotStartedStartsNow: a running gang whose Started is zero (booked,
// not started yet) is decided on as one that started at the cycle's time —
// its time limit, the work it would lose if preempted, the drain of its
// nodes — over random fleets where a cycle fills the fleet, then gangs of
// higher priority, some with time limits, are decided with reservations
// (held domains drain by the gangs' time limits) and preemption.
func TestNotStartedStartsNow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := now.Add(90 * time.Minute)
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 11))
		fleet := randomFleet(rng)
		var first []Gang
		for i := range 12 {
			g := randomGang(rng, i, now)
			if rng.IntN(2) == 0 {
				g.Estimate = time.Duration(1+rng.IntN(4)) * time.Hour
			}
			g.GracePeriod = time.Duration(rng.IntN(10)) * time.Minute
			first = append(first, g)
		}
		var zero, set []Allocation
		for _, p := range Schedule(NewSnapshot(fleet, nil), Input{Now: now, Pending: first}).Placements {
			for _, g := range first {
				if g.ID != p.Gang {
					continue
				}
				a := Allocation{Gang: g, Assignments: p.Assignments}
				if rng.IntN(2) == 0 {
					a.Started = now
				}
				zero = append(zero, a)
				if a.Started.IsZero() {
					a.Started = later // what a caller setting the times would give
				}
				set = append(set, a)
			}
		}
		var more []Gang
		for i := range 6 {
			g := randomGang(rng, 100+i, now)
			g.Priority = PriorityProduction
			if rng.IntN(2) == 0 {
				g.Estimate = time.Hour
			}
			more = append(more, g)
		}
		in := Input{Now: later, Pending: more}
		opts := []Option{WithPreemptAfter(0), WithReservations(4, 1, 1)}
		a := Schedule(NewSnapshot(fleet, zero), in, opts...)
		b := Schedule(NewSnapshot(fleet, set), in, opts...)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: decided\n%+v\nwith gangs not started; want\n%+v", seed, a, b)
		}
	}
}
