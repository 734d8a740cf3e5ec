// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func placedIDs(d Decision) map[string]bool {
	out := map[string]bool{}
	for _, p := range d.Placements {
		out[p.Gang] = true
	}
	return out
}

func waitReason(d Decision, id string) Reason {
	for _, w := range d.Waiting {
		if w.Gang == id {
			return w.Why.Reason
		}
	}
	return ""
}

func TestSchedulePriorityPreemption(t *testing.T) {
	c := fleetSpec{name: "c", racks: 2, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	low := newGang("low", 2, 8).priority(PriorityBatch, true).obj()
	old := newGang("old", 1, 8).priority(PriorityBatch, true).obj()
	prod := newGang("prod", 1, 8).priority(PriorityProduction, false).obj()
	for _, g := range []Gang{low, old, prod} {
		p, err := s.Place(g)
		if err != nil {
			t.Fatal(err)
		}
		started := t0
		if g.ID == "old" {
			started = t0.Add(-10 * time.Hour)
		}
		if err := s.Assume(g, p, started); err != nil {
			t.Fatal(err)
		}
	}
	// 8 GPUs free on one node. A production gang of 2×8 in one rack must preempt.
	want := newGang("urgent", 2, 8).priority(PriorityProduction, false).required(inventory.LevelRack).obj()
	d := Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{want}})
	if len(d.Preemptions) != 1 {
		t.Fatalf("preemptions = %+v", d.Preemptions)
	}
	v := d.Preemptions[0]
	if v.Victim == "prod" {
		t.Fatalf("preempted a non-preemptible gang")
	}
	if v.Victim != "old" && v.Victim != "low" {
		t.Fatalf("victim = %s", v.Victim)
	}
	if v.Reason == "" || waitReason(d, "urgent") != ReasonPreempting || len(d.Reservations) != 1 {
		t.Errorf("decision = %+v", d)
	}
	// Same input again with the victim terminating: no new preemption.
	d2 := Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{want},
		Terminating: map[string]string{v.Victim: "urgent"}, Reservations: d.Reservations})
	if len(d2.Preemptions) != 0 || waitReason(d2, "urgent") != ReasonPreempting {
		t.Errorf("second cycle = %+v", d2)
	}
	// Once the victim is gone the gang lands in the reserved domain.
	if _, err := s.Release(v.Victim); err != nil {
		t.Fatal(err)
	}
	d3 := Schedule(s, Input{Now: t0.Add(2 * time.Hour), Pending: []Gang{want}, Reservations: d2.Reservations})
	if !placedIDs(d3)["urgent"] {
		t.Errorf("third cycle = %+v", d3)
	}
}

func TestScheduleReservationBlocksBackfillInDomain(t *testing.T) {
	c := fleetSpec{name: "c", racks: 2, perRack: 2, gpus: 8}.cluster()
	c.Nodes[0].UsedGPUs = 8 // rack r00 has 8 free, rack r01 has 16.
	c.Nodes[2].UsedGPUs = 4
	c.Nodes[3].UsedGPUs = 4
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	big := newGang("big", 2, 8).required(inventory.LevelRack).queue("a").obj()
	big.Submitted = t0
	small := newGang("small", 1, 8).queue("a").obj()
	small.Submitted = t0.Add(time.Minute)
	d := Schedule(s, Input{Now: t0, Pending: []Gang{big, small}}, WithPreemption(false, 0))
	if len(d.Reservations) != 1 || d.Reservations[0].Gang != "big" || d.Reservations[0].Domain != "c/rack:r00" {
		t.Fatalf("reservations = %+v", d.Reservations)
	}
	if placedIDs(d)["small"] {
		t.Errorf("small backfilled into the reserved rack: %+v", d.Placements)
	}
	// With a node free elsewhere the small gang backfills there.
	s.SetNodeSchedulable("c", "r00-n01", true)
	c.Nodes[2].UsedGPUs = 0
	s2 := NewSnapshot([]inventory.Cluster{c}, nil)
	d2 := Schedule(s2, Input{Now: t0, Pending: []Gang{big, small}, Reservations: d.Reservations}, WithPreemption(false, 0))
	if !placedIDs(d2)["small"] || placedIDs(d2)["big"] {
		t.Errorf("decision = %+v", d2)
	}
}

func TestScheduleFairShareOrder(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	// Queue a already runs 8 GPUs; a and b both want 8; only 8 are free.
	run := newGang("run", 1, 8).queue("org/a").obj()
	p, _ := s.Place(run)
	_ = s.Assume(run, p, t0)
	ga := newGang("ga", 1, 8).queue("org/a").obj()
	gb := newGang("gb", 1, 8).queue("org/b").obj()
	gb.Submitted = t0.Add(time.Hour) // younger, but its queue has the lower share
	d := Schedule(s, Input{Now: t0, Pending: []Gang{ga, gb}}, WithReservations(0, 0, 0))
	if !placedIDs(d)["gb"] || placedIDs(d)["ga"] {
		t.Errorf("placed %v, want gb", placedIDs(d))
	}
}

func TestScheduleQuota(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	limit := 0
	qs := []Queue{{Name: "team", Quotas: map[string]Quota{"": {Nominal: 8, BorrowingLimit: &limit}}}}
	g1 := newGang("g1", 1, 8).queue("team/x").obj()
	g2 := newGang("g2", 1, 8).queue("team/y").obj()
	g2.Submitted = t0.Add(time.Second)
	d := Schedule(s, Input{Now: t0, Pending: []Gang{g1, g2}, Queues: qs})
	if !placedIDs(d)["g1"] || waitReason(d, "g2") != ReasonQuota {
		t.Errorf("decision = %+v", d)
	}
}

func TestScheduleStrictFIFOBlocks(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 1, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	big := newGang("big", 2, 8).obj()
	small := newGang("small", 1, 1).obj()
	small.Submitted = t0.Add(time.Second)
	d := Schedule(s, Input{Now: t0, Pending: []Gang{big, small}}, WithOrder(OrderFIFO), WithStrictOrder(),
		WithReservations(0, 0, 0), WithPreemption(false, 0))
	if len(d.Placements) != 0 || waitReason(d, "small") != ReasonBlocked {
		t.Errorf("decision = %+v", d)
	}
}

func TestScheduleBackfillWithEstimates(t *testing.T) {
	tests := []struct {
		name     string
		estimate time.Duration
		placed   bool
	}{
		{"ends before the held nodes drain", time.Hour, true},
		{"would still run when the big gang needs the node", 3 * time.Hour, false},
		{"no estimate never backfills", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()
			s := NewSnapshot([]inventory.Cluster{c}, nil)
			run := newGang("run", 1, 8).obj()
			run.Estimate = 2 * time.Hour
			p, _ := s.Place(run)
			if err := s.Assume(run, p, t0); err != nil {
				t.Fatal(err)
			}
			big := newGang("big", 2, 8).required(inventory.LevelRack).queue("a").obj()
			big.Submitted = t0
			small := newGang("small", 1, 8).queue("b").obj()
			small.Submitted, small.Estimate = t0.Add(time.Minute), tt.estimate
			d := Schedule(s, Input{Now: t0, Pending: []Gang{big, small}}, WithPreemption(false, 0))
			if len(d.Reservations) != 1 || d.Reservations[0].Gang != "big" || len(d.Reservations[0].Nodes) != 2 {
				t.Fatalf("reservations = %+v", d.Reservations)
			}
			if got := placedIDs(d)["small"]; got != tt.placed {
				t.Errorf("small placed = %v, want %v", got, tt.placed)
			}
		})
	}
}

func TestScheduleReclaimTakesOnlySurplus(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	qs := []Queue{{Name: "a", Quotas: map[string]Quota{"": {Nominal: 16}}}, {Name: "b", Quotas: map[string]Quota{"": {Nominal: 16}}}}
	// Queue a borrows: it runs 32 GPUs against a nominal 16.
	for i := range 4 {
		g := newGang(fmt.Sprintf("a%d", i), 1, 8).queue("a").obj()
		p, err := s.Place(g)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Assume(g, p, t0)
	}
	want := newGang("b-big", 3, 8).queue("b").obj() // 24 > b's nominal 16: may not reclaim
	d := Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{want}, Queues: qs}, WithReclaim())
	if len(d.Preemptions) != 0 {
		t.Fatalf("reclaimed beyond the preemptor's nominal: %+v", d.Preemptions)
	}
	fair := newGang("b-fair", 2, 8).queue("b").obj() // 16 = b's nominal; a keeps its 16
	d = Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{fair}, Queues: qs}, WithReclaim())
	if len(d.Preemptions) != 2 {
		t.Fatalf("preemptions = %+v, want two of queue a's gangs", d.Preemptions)
	}
	d = Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{fair}, Queues: qs})
	if len(d.Preemptions) != 0 {
		t.Errorf("reclaim happened while off: %+v", d.Preemptions)
	}
}

// TestScheduleCarriesRefs: every placement and wait carries its gang's Ref
// as given, in whatever order the gangs were decided.
func TestScheduleCarriesRefs(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	var pending []Gang
	for i, n := range []int{2, 1, 1, 3, 1} { // 16 GPUs: the first two or three fit
		g := newGang(fmt.Sprintf("g%d", i), n, 8).obj()
		g.Submitted = t0.Add(time.Duration(len(pending)-i*2) * time.Minute) // not in input order
		g.Ref = 100 + i
		pending = append(pending, g)
	}
	d := Schedule(s, Input{Now: t0.Add(time.Hour), Pending: pending})
	if len(d.Placements) == 0 || len(d.Waiting) == 0 {
		t.Fatalf("placed %d, waiting %d: want some of each", len(d.Placements), len(d.Waiting))
	}
	check := func(id string, ref int) {
		var i int
		if _, err := fmt.Sscanf(id, "g%d", &i); err != nil || ref != 100+i {
			t.Fatalf("gang %s carries Ref %d, want %d", id, ref, 100+i)
		}
	}
	for _, p := range d.Placements {
		check(p.Gang, p.Ref)
	}
	for _, w := range d.Waiting {
		check(w.Gang, w.Ref)
	}
}
