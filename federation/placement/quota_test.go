// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

func lim(n int) *int { return &n }

func quotas(kv ...any) map[string]Quota {
	out := map[string]Quota{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(Quota)
	}
	return out
}

// gangs returns n gangs of one member of gpm GPUs in queue q, submitted in order.
func gangs(prefix, q string, n, gpm int) []Gang {
	out := make([]Gang, n)
	for i := range n {
		out[i] = newGang(fmt.Sprintf("%s%d", prefix, i), 1, gpm).queue(q).obj()
		out[i].Submitted = t0.Add(time.Duration(i) * time.Second)
	}
	return out
}

func TestQuotaBorrowingLimitZero(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 6, gpus: 8, product: h100}.cluster()}, nil)
	qs := []Queue{{Name: "team", Quotas: quotas("h100", Quota{Nominal: 16, BorrowingLimit: lim(0)})}}
	big := newGang("big", 2, 8).queue("team").obj()
	big.Submitted = t0.Add(time.Hour)
	pending := append(gangs("t", "team", 4, 8), big)
	d := Schedule(s, Input{Now: t0, Pending: pending, Queues: qs})
	if got := placedIDs(d); len(got) != 2 || !got["t0"] || !got["t1"] {
		t.Fatalf("placed %v, want t0 and t1 (16 of 48 GPUs)", got)
	}
	for _, w := range d.Waiting {
		if w.Why.Reason != ReasonQuota {
			t.Errorf("%s waits for %s, want %s", w.Gang, w.Why.Reason, ReasonQuota)
		}
	}
	want := "queue team would hold 24 h100 GPUs, quota nominal 16 + borrowing 0"
	if w := waitFor(d, "t2"); w == nil || w.Message != want {
		t.Errorf("t2 waits with %+v, want %q", w, want)
	}
	if len(d.Reservations) != 0 || len(d.Preemptions) != 0 {
		t.Errorf("a gang over quota held nodes or preempted: %+v %+v", d.Reservations, d.Preemptions)
	}
	// Another class's quota does not bound h100 GPUs.
	s = NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 6, gpus: 8, product: h100}.cluster()}, nil)
	qs = []Queue{{Name: "team", Quotas: quotas("a100-80gb", Quota{Nominal: 0, BorrowingLimit: lim(0)})}}
	if d := Schedule(s, Input{Now: t0, Pending: gangs("t", "team", 4, 8), Queues: qs}); len(d.Placements) != 4 {
		t.Errorf("an a100-80gb quota held back h100 gangs: %+v", d.Waiting)
	}
}

func TestQuotaBorrowsOnlyIdleNominal(t *testing.T) {
	fleet := []inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 8, gpus: 8, product: h100}.cluster()}
	s := NewSnapshot(fleet, nil)
	qs := []Queue{
		{Name: "a", Quotas: quotas("h100", Quota{Nominal: 16})}, // borrowing unlimited
		{Name: "b", Quotas: quotas("h100", Quota{Nominal: 8})},
	}
	d := Schedule(s, Input{Now: t0, Pending: gangs("a", "a", 6, 8), Queues: qs})
	if got := len(d.Placements); got != 3 {
		t.Fatalf("queue a placed %d gangs of 8, want 3 (nominal 16 + b's idle 8; the fleet has 64)", got)
	}
	want := "queue a would hold 32 h100 GPUs, quota nominal 16 + borrowing unlimited; its cohort has 0 idle to lend"
	if w := waitFor(d, "a3"); w == nil || w.Message != want {
		t.Errorf("a3 waits with %+v, want %q", w, want)
	}
	// b is within its nominal: it gets its 8 though a borrowed them, since GPUs are free.
	d = Schedule(s, Input{Now: t0, Pending: gangs("b", "b", 2, 8), Queues: qs})
	if got := placedIDs(d); len(got) != 1 || !got["b0"] {
		t.Errorf("queue b placed %v, want b0 only", got)
	}
}

func TestQuotaHierarchy(t *testing.T) {
	fleet := []inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 8, gpus: 8, product: h100}.cluster()}
	// The parent's quota bounds its children, which have none.
	s := NewSnapshot(fleet, nil)
	qs := []Queue{{Name: "org", Quotas: quotas("h100", Quota{Nominal: 16, BorrowingLimit: lim(0)})}}
	pending := append(gangs("x", "org/x", 2, 8), gangs("y", "org/y", 2, 8)...)
	d := Schedule(s, Input{Now: t0, Pending: pending, Queues: qs})
	if len(d.Placements) != 2 {
		t.Fatalf("org's children placed %d gangs of 8 against org's 16", len(d.Placements))
	}
	if w := waitFor(d, d.Waiting[0].Gang); !strings.HasPrefix(w.Message, "queue org would hold 24 h100 GPUs") {
		t.Errorf("waiting message %q does not name the parent", w.Message)
	}
	// Children with quotas borrow from each other within the parent's bound.
	s = NewSnapshot(fleet, nil)
	qs = []Queue{
		{Name: "org", Quotas: quotas("h100", Quota{Nominal: 24, BorrowingLimit: lim(0)})},
		{Name: "org/x", Quotas: quotas("h100", Quota{Nominal: 8})},
		{Name: "org/y", Quotas: quotas("h100", Quota{Nominal: 8, BorrowingLimit: lim(0)})},
		{Name: "other", Quotas: quotas("h100", Quota{Nominal: 32})}, // idle, but not in org/x's cohort
	}
	d = Schedule(s, Input{Now: t0, Pending: gangs("x", "org/x", 4, 8), Queues: qs})
	if len(d.Placements) != 2 {
		t.Fatalf("org/x placed %d gangs of 8, want 2 (nominal 8 + org/y's idle 8)", len(d.Placements))
	}
	d = Schedule(s, Input{Now: t0, Pending: gangs("y", "org/y", 2, 8), Queues: qs})
	if len(d.Placements) != 1 {
		t.Fatalf("org/y placed %d gangs of 8, want 1 (its nominal 8, org's 24 then full)", len(d.Placements))
	}
}

func TestQuotaMIGSlices(t *testing.T) {
	c := inventory.Cluster{Name: "m", Nodes: []inventory.Node{{Name: "n0", Product: "NVIDIA-A100-SXM4-80GB", Ready: true,
		MIG: map[string]inventory.MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 14}}}}}
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	qs := []Queue{{Name: "q", Quotas: quotas("mig-1g.10gb", Quota{Nominal: 4, BorrowingLimit: lim(0)})}}
	var pending []Gang
	for i := range 3 {
		g := newGang(fmt.Sprintf("m%d", i), 2, 1).mig("nvidia.com/mig-1g.10gb").queue("q").obj()
		g.Submitted = t0.Add(time.Duration(i) * time.Second)
		pending = append(pending, g)
	}
	d := Schedule(s, Input{Now: t0, Pending: pending, Queues: qs})
	if len(d.Placements) != 2 {
		t.Fatalf("placed %d MIG gangs of 2 slices against a quota of 4", len(d.Placements))
	}
	if w := waitFor(d, "m2"); w == nil || w.Message != "queue q would hold 6 1g.10gb MIG slices, quota nominal 4 + borrowing 0" {
		t.Errorf("m2 waits with %+v", w)
	}
}

// TestQuotaNeverExceeded: over random fleets, queue trees, quotas and
// cycles (gangs starting and ending), no queue ever holds more than its
// nominal plus borrowing limit of a class, and a placement that leaves its
// queue borrowing stays within the cohort's idle nominal quota.
func TestQuotaNeverExceeded(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		fleet := []inventory.Cluster{
			fleetSpec{name: "h", racks: 1 + rng.IntN(3), perRack: 2 + rng.IntN(4), gpus: 8, product: h100}.cluster(),
			fleetSpec{name: "a", racks: 1, perRack: 1 + rng.IntN(4), gpus: 8, product: "NVIDIA-A100-SXM4-80GB"}.cluster(),
		}
		s := NewSnapshot(fleet, nil)
		names := []string{"a", "a/x", "a/y", "b", "b/z", "c"}
		var qs []Queue
		for _, n := range names {
			if rng.IntN(3) == 0 {
				continue
			}
			qu := map[string]Quota{}
			for _, k := range []string{"h100", "a100", "a100-80gb", ""} {
				if rng.IntN(2) == 0 {
					q := Quota{Nominal: 8 * rng.IntN(4)}
					if rng.IntN(2) == 0 {
						q.BorrowingLimit = lim(8 * rng.IntN(3))
					}
					qu[k] = q
				}
			}
			qs = append(qs, Queue{Name: n, Quotas: qu})
		}
		leaves := []string{"a/x", "a/y", "b/z", "c", "d"}
		placed := 0
		now := t0
		for cycle := range 12 {
			var pending []Gang
			for i := range 6 {
				g := newGang(fmt.Sprintf("g%d-%d", cycle, i), 1+rng.IntN(2), []int{1, 4, 8}[rng.IntN(3)]).
					queue(leaves[rng.IntN(len(leaves))]).obj()
				if rng.IntN(3) == 0 {
					g.Products = []string{[]string{h100, "NVIDIA-A100-SXM4-80GB"}[rng.IntN(2)]}
				}
				g.Submitted = now
				pending = append(pending, g)
			}
			for _, g := range pending { // one gang per decision: each placement is checked on its own
				before := heldByQueue(s)
				d := Schedule(s, Input{Now: now, Pending: []Gang{g}, Queues: qs}, WithPreemption(false, 0))
				checkQuotas(t, seed, qs, before, heldByQueue(s))
				if len(d.Placements) > 0 {
					placed++
				}
			}
			for _, a := range s.Running() { // about a third of the gangs end
				if rng.IntN(3) == 0 {
					if _, err := s.Release(a.Gang.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			now = now.Add(time.Minute)
		}
		if placed == 0 {
			t.Fatalf("seed %d: nothing placed; the property is vacuous", seed)
		}
	}
}

// heldByQueue computes, independently of the engine's tree, the GPUs each
// queue's subtree holds by quota key.
func heldByQueue(s *Snapshot) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, a := range s.Running() {
		keys := []string{""}
		if p := a.Assignments[0].Cluster; p == "h" {
			keys = append(keys, "h100")
		} else {
			keys = append(keys, "a100", "a100-80gb")
		}
		for _, as := range a.Assignments {
			if (as.Cluster == "h") != (keys[1] == "h100") {
				panic("test fleets put one product in each cluster")
			}
		}
		q := a.Gang.Queue
		for {
			if out[q] == nil {
				out[q] = map[string]int{}
			}
			for _, k := range keys {
				out[q][k] += a.Gang.GPUs()
			}
			i := strings.LastIndexByte(q, '/')
			if i < 0 {
				break
			}
			q = q[:i]
		}
	}
	return out
}

func checkQuotas(t *testing.T, seed uint64, qs []Queue, before, held map[string]map[string]int) {
	t.Helper()
	for _, q := range qs {
		for k, quota := range q.Quotas {
			h := held[q.Name][k]
			if b := quota.BorrowingLimit; b != nil && h > quota.Nominal+*b {
				t.Fatalf("seed %d: queue %s holds %d %q GPUs over nominal %d + borrowing %d", seed, q.Name, h, k, quota.Nominal, *b)
			}
			if h <= quota.Nominal || h <= before[q.Name][k] {
				continue
			}
			// This placement made q borrow more: its cohort must stay within its nominal sum.
			nominal, sum := 0, 0
			for _, m := range qs {
				if mq, ok := m.Quotas[k]; ok && cohortParent(qs, m.Name, k) == cohortParent(qs, q.Name, k) {
					nominal += mq.Nominal
					sum += held[m.Name][k]
				}
			}
			if sum > nominal {
				t.Fatalf("seed %d: queue %s borrowed to %d %q GPUs while its cohort holds %d of nominal %d",
					seed, q.Name, h, k, sum, nominal)
			}
		}
	}
}

// cohortParent is the nearest ancestor with a quota for k ("" for none).
func cohortParent(qs []Queue, name, k string) string {
	for {
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return ""
		}
		name = name[:i]
		for _, q := range qs {
			if _, ok := q.Quotas[k]; ok && q.Name == name {
				return name
			}
		}
	}
}

func waitFor(d Decision, gang string) *Unschedulable {
	for _, w := range d.Waiting {
		if w.Gang == gang {
			return w.Why
		}
	}
	return nil
}

func TestQueueUsage(t *testing.T) {
	fleet := []inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8, product: h100}.cluster()}
	// A gang on a cluster that left the snapshot (not Ready) still counts.
	gone := Allocation{Gang: newGang("gone", 1, 8).queue("org/x").products(h100).obj(),
		Assignments: []Assignment{{Cluster: "lost", Node: "n0", Members: 1}}}
	s := NewSnapshot(fleet, []Allocation{gone})
	qs := []Queue{{Name: "org", Quotas: quotas("h100", Quota{Nominal: 8})}, {Name: "spare", Quotas: quotas("h100", Quota{Nominal: 8})}}
	d := Schedule(s, Input{Now: t0, Pending: gangs("x", "org/x", 2, 8), Queues: qs})
	if len(d.Placements) != 1 {
		t.Fatalf("placed %d, want 1: with the lost gang's 8, org borrows spare's 8 and no more", len(d.Placements))
	}
	u := s.QueueUsage(qs)
	if got := u["org"]; got.GPUs["h100"] != 16 || got.GPUs[""] != 16 || got.Borrowed["h100"] != 8 {
		t.Errorf("org usage = %+v, want 16 h100 held, 8 borrowed", got)
	}
	if got := u["org/x"]; got.GPUs["h100"] != 16 || len(got.Borrowed) != 0 {
		t.Errorf("org/x usage = %+v, want 16 h100 held, none borrowed (no quota)", got)
	}
	if got := u["spare"]; len(got.GPUs) != 0 {
		t.Errorf("spare usage = %+v, want none", got)
	}
}

// TestQueueReclaimOptIn: a queue that opts into reclaim takes back its
// nominal quota from a borrower without the global WithReclaim; one that
// does not, waits.
func TestQueueReclaimOptIn(t *testing.T) {
	for _, optIn := range []bool{true, false} {
		s := NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8, product: h100}.cluster()}, nil)
		qs := []Queue{{Name: "a", Quotas: quotas("h100", Quota{Nominal: 16})}, {Name: "b", Quotas: quotas("h100", Quota{Nominal: 16}), Reclaim: optIn}}
		d := Schedule(s, Input{Now: t0, Pending: gangs("a", "a", 4, 8), Queues: qs}) // a borrows all of b's idle 16
		if len(d.Placements) != 4 {
			t.Fatalf("queue a placed %d gangs of 8, want 4 (16 + b's idle 16)", len(d.Placements))
		}
		fair := newGang("b-fair", 2, 8).queue("b").obj() // 16 = b's nominal
		d = Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{fair}, Queues: qs})
		if optIn && len(d.Preemptions) != 2 {
			t.Errorf("opted in: preemptions = %+v, want two of queue a's gangs", d.Preemptions)
		}
		if !optIn && len(d.Preemptions) != 0 {
			t.Errorf("not opted in: reclaimed %+v", d.Preemptions)
		}
		for _, p := range d.Preemptions {
			if !strings.Contains(p.Reason, "queue a borrows beyond its nominal quota and b reclaims it") {
				t.Errorf("preemption reason %q", p.Reason)
			}
		}
	}
}

// TestQueueUsageSumsEveryRunningGang checks, over random fleets and
// cycles, that QueueUsage (charged from the snapshot's running sums) is
// what charging every running gang on its own gives.
func TestQueueUsageSumsEveryRunningGang(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queues := []Queue{{Name: "a", Quotas: map[string]Quota{"": {Nominal: 8}}}, {Name: "a/x"}, {Name: "b"}}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		s := NewSnapshot(randomFleet(rng), nil)
		var pending []Gang
		for i := range 12 {
			pending = append(pending, randomGang(rng, i, now))
		}
		Schedule(s, Input{Now: now, Pending: pending, Queues: queues})
		want := newQueueTree(queues, nil)
		for _, al := range s.allocs.all() {
			want.charge(al.Gang.Queue, nil, s.allocUse(al))
		}
		got := s.QueueUsage(queues)
		for name, n := range want.byKey {
			if name == "" {
				continue
			}
			for k, g := range n.held {
				if g > 0 && got[name].GPUs[k] != g {
					t.Fatalf("seed %d: queue %q holds %d of %q, QueueUsage says %d", seed, name, g, k, got[name].GPUs[k])
				}
			}
			if _, ok := got[name]; !ok {
				t.Fatalf("seed %d: queue %q missing from QueueUsage", seed, name)
			}
			for k, q := range n.quotas {
				if b := n.held[k] - q.Nominal; b > 0 && got[name].Borrowed[k] != b {
					t.Fatalf("seed %d: queue %q borrows %d of %q, QueueUsage says %d", seed, name, b, k, got[name].Borrowed[k])
				}
			}
		}
		if len(got) != len(want.byKey)-1 {
			t.Fatalf("seed %d: QueueUsage lists %d queues, want %d", seed, len(got), len(want.byKey)-1)
		}
	}
}

// TestQueueUsageListsQueuesOfGangsWithoutGPUs: a queue whose only running
// gang holds no GPU is listed by QueueUsage, and no longer once the gang
// is released (the snapshot counts such gangs by queue as they come and
// go).
func TestQueueUsageListsQueuesOfGangsWithoutGPUs(t *testing.T) {
	fleet := []inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8, product: h100}.cluster()}
	cpu := Allocation{Gang: newGang("cpu-only", 1, 0).queue("cpu").obj(),
		Assignments: []Assignment{{Cluster: "c", Node: fleet[0].Nodes[0].Name, Members: 1}}}
	s := NewSnapshot(fleet, []Allocation{cpu})
	if _, ok := s.QueueUsage(nil)["cpu"]; !ok {
		t.Fatalf("queue cpu not listed while its gang without GPUs runs: %v", s.QueueUsage(nil))
	}
	if _, err := s.Release("cpu-only"); err != nil {
		t.Fatal(err)
	}
	if u, ok := s.QueueUsage(nil)["cpu"]; ok {
		t.Fatalf("queue cpu listed (%+v) after its only gang was released", u)
	}
}
