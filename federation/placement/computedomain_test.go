// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// cdFleet: cluster gb serves ComputeDomains (3 racks, each its own clique,
// of 2 nodes × 4 GPUs); nocd has the same cliques but does not serve
// them; plain has no cliques at all.
func cdFleet() []inventory.Cluster {
	gb := fleetSpec{name: "gb", racks: 3, perRack: 2, gpus: 4, clique: true}.cluster()
	gb.ComputeDomains = true
	nocd := fleetSpec{name: "nocd", racks: 3, perRack: 2, gpus: 4, clique: true}.cluster()
	plain := fleetSpec{name: "plain", racks: 1, perRack: 4, gpus: 4}.cluster()
	return []inventory.Cluster{gb, nocd, plain}
}

func cdGang(id string, members int) Gang {
	g := newGang(id, members, 4).obj()
	g.ComputeDomain = true
	return g
}

// cliquesOf returns the cliques (racks of fleetSpec) a placement uses, and
// fails unless every member is in cluster gb.
func cliquesOf(t *testing.T, p Placement) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, a := range p.Assignments {
		if a.Cluster != "gb" {
			t.Fatalf("%s: member on %s/%s, want only cluster gb (the one serving ComputeDomains)", p.Gang, a.Cluster, a.Node)
		}
		out[a.Node[:3]] = true
	}
	return out
}

// TestComputeDomainGangOnlyInFreeCliques: a compute-domain gang lands only
// on nodes with a clique in the cluster serving ComputeDomains; a second
// one never takes a node of a clique the first holds, though that clique
// still has a free node (BinPack's first choice without the rule); a third
// waits naming the compute domain; a gang without a compute domain may use
// the free node of a held clique.
func TestComputeDomainGangOnlyInFreeCliques(t *testing.T) {
	s := NewSnapshot(cdFleet(), nil)
	now := time.Now()
	first := cdGang("first", 3)
	p1, err := s.Place(first)
	if err != nil {
		t.Fatal(err)
	}
	held := cliquesOf(t, p1)
	if len(held) != 2 {
		t.Fatalf("first: cliques %v, want 2 (3 members of 4 GPUs on racks of 2 nodes)", held)
	}
	if err := s.Assume(first, p1, now); err != nil {
		t.Fatal(err)
	}
	second := cdGang("second", 2)
	p2, err := s.Place(second)
	if err != nil {
		t.Fatalf("second: %v", err)
	}
	for c := range cliquesOf(t, p2) {
		if held[c] {
			t.Fatalf("second shares clique %s with first: %+v", c, p2.Assignments)
		}
	}
	if err := s.Assume(second, p2, now); err != nil {
		t.Fatal(err)
	}
	_, err = s.Place(cdGang("third", 1))
	var u *Unschedulable
	if !errors.As(err, &u) || u.Reason != ReasonNoMatchingNodes || !strings.Contains(u.Message, "compute domain") {
		t.Fatalf("third: %v, want NoMatchingNodes naming the compute domain", err)
	}
	plain := newGang("plain", 1, 4).obj()
	plain.Clusters = []string{"gb"}
	p4, err := s.Place(plain)
	if err != nil || len(p4.Assignments) != 1 || !held[p4.Assignments[0].Node[:3]] {
		t.Fatalf("a gang without a compute domain: %+v, %v; want the free node of a held clique", p4, err)
	}
	// Released, the first gang's cliques are free again.
	if _, err := s.Release("first"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place(cdGang("third", 1)); err != nil {
		t.Fatalf("third after first ended: %v", err)
	}
}

// TestComputeDomainGangsOfOneCycle: two compute-domain gangs placed in the
// same cycle take different cliques (BinPack would put the second beside
// the first), and a third, with no free clique left, waits.
func TestComputeDomainGangsOfOneCycle(t *testing.T) {
	gb := fleetSpec{name: "gb", racks: 2, perRack: 2, gpus: 4, clique: true}.cluster()
	gb.ComputeDomains = true
	s := NewSnapshot([]inventory.Cluster{gb}, nil)
	now := time.Now()
	a, b, c := cdGang("a", 1), cdGang("b", 1), cdGang("c", 1)
	a.Submitted, b.Submitted, c.Submitted = now, now.Add(time.Second), now.Add(2*time.Second)
	d := Schedule(s, Input{Now: now, Pending: []Gang{a, b, c}, Queues: []Queue{{Name: "q", Weight: 1}}})
	if len(d.Placements) != 2 || len(d.Waiting) != 1 || d.Waiting[0].Gang != "c" {
		t.Fatalf("placements %+v, waiting %+v; want a and b placed, c waiting", d.Placements, d.Waiting)
	}
	ca, cb := cliquesOf(t, d.Placements[0]), cliquesOf(t, d.Placements[1])
	for k := range ca {
		if cb[k] {
			t.Fatalf("a and b share clique %s: %+v", k, d.Placements)
		}
	}
	if !strings.Contains(d.Waiting[0].Why.Message, "compute domain") {
		t.Fatalf("c waits with %q, want the compute domain named", d.Waiting[0].Why.Message)
	}
}
