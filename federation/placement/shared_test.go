// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// sharedFleet is one cluster: a whole-GPU node w0 (8 GPUs) and shared
// nodes of 2 GPUs × 4 replicas (8 shares): "busy" (2 used), "mps" (3 used,
// MPS) and "plain" whose shares the device plugin did not rename (not
// requestable); and "fresh", 1 GPU × 4 replicas, no share used: the best
// fit by free shares alone.
func sharedFleet() []inventory.Cluster {
	sh := func(name, strategy string, used int, res string) inventory.Node {
		return inventory.Node{Name: name, Product: h100, Ready: true, Shared: &inventory.SharedGPUs{
			Strategy: strategy, Replicas: 4, Resource: res, GPUs: 2, Allocatable: 8, Used: used}}
	}
	fresh := sh("fresh", inventory.SharingTimeSlicing, 0, inventory.ResourceGPUShared)
	fresh.Shared.GPUs, fresh.Shared.Allocatable = 1, 4
	return []inventory.Cluster{{Name: "c", Nodes: []inventory.Node{
		{Name: "w0", Product: h100, GPUs: 8, Ready: true},
		fresh,
		sh("busy", inventory.SharingTimeSlicing, 2, inventory.ResourceGPUShared),
		sh("mps", inventory.SharingMPS, 3, inventory.ResourceGPUShared),
		sh("plain", inventory.SharingTimeSlicing, 7, inventory.ResourceGPU),
	}}}
}

func sharedGang(id string, members, shares int, strategy string) Gang {
	g := newGang(id, members, shares).obj()
	g.Shared = &SharedRequest{Strategy: strategy}
	return g
}

func onlyNode(t *testing.T, p Placement) string {
	t.Helper()
	if len(p.Assignments) != 1 {
		t.Fatalf("assignments %+v, want one node", p.Assignments)
	}
	return p.Assignments[0].Node
}

// Shared-GPU members are packed onto already shared GPUs first: the node
// with the most shares in use, although a fresh node is the better fit by
// free shares alone (4 free against busy's 6).
func TestSharedMembersPackOntoSharesInUse(t *testing.T) {
	s := NewSnapshot(sharedFleet(), nil)
	for _, tc := range []struct {
		strategy, want string
	}{{"", "mps"}, {inventory.SharingTimeSlicing, "busy"}, {inventory.SharingMPS, "mps"}} {
		p, err := s.Place(sharedGang("a", 1, 1, tc.strategy))
		if err != nil {
			t.Fatalf("strategy %q: %v", tc.strategy, err)
		}
		if got := onlyNode(t, p); got != tc.want {
			t.Errorf("strategy %q: placed on %s, want %s", tc.strategy, got, tc.want)
		}
	}
	// Time-sliced members fill busy (6 free) before they touch fresh.
	var pending []Gang
	for _, id := range []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6"} {
		g := sharedGang(id, 1, 1, inventory.SharingTimeSlicing)
		g.Submitted = t0
		pending = append(pending, g)
	}
	d := Schedule(s, Input{Now: t0, Pending: pending})
	on := map[string]int{}
	for _, p := range d.Placements {
		on[onlyNode(t, p)]++
	}
	if on["busy"] != 6 || on["fresh"] != 1 || len(d.Placements) != 7 {
		t.Errorf("placed per node %v, want busy 6 then fresh 1", on)
	}
	if f := s.NodeFree("c", "w0"); f != 8 {
		t.Errorf("whole GPUs free on w0 = %d after shared members, want 8", f)
	}
}

// Whole GPUs are never given to shared members, nor shares to gangs of
// whole GPUs; unrenamed shares serve neither.
func TestSharesAndWholeGPUsApart(t *testing.T) {
	s := NewSnapshot(sharedFleet(), nil)
	p, err := s.Place(newGang("whole", 1, 8).obj())
	if err != nil || onlyNode(t, p) != "w0" {
		t.Fatalf("8-GPU member: %+v, %v; want w0", p, err)
	}
	if _, err := s.Place(newGang("two", 2, 8).obj()); err == nil {
		t.Errorf("two 8-GPU members fit a fleet with one whole-GPU node")
	}
	// 6 shares per member fit busy only (plain's 8 are not requestable).
	p, err = s.Place(sharedGang("big", 1, 6, ""))
	if err != nil || onlyNode(t, p) != "busy" {
		t.Fatalf("6-share member: %+v, %v; want busy", p, err)
	}
	_, err = s.Place(sharedGang("huge", 1, 7, ""))
	var u *Unschedulable
	if !errors.As(err, &u) || !strings.Contains(u.Message, "GPU shares") {
		t.Errorf("7-share member: %v, want an explanation in GPU shares", err)
	}
	if _, err := s.Place(Gang{ID: "x", Members: 1, GPUsPerMember: 1, MIGResource: "nvidia.com/mig-1g.10gb",
		Shared: &SharedRequest{}}); !errors.Is(err, ErrInvalidGang) {
		t.Errorf("MIG and shared both: %v, want ErrInvalidGang", err)
	}
}

func TestSharedStrategyFilter(t *testing.T) {
	fleet := sharedFleet()
	fleet[0].Nodes = fleet[0].Nodes[:3] // w0, fresh, busy: time-slicing only
	s := NewSnapshot(fleet, nil)
	_, err := s.Place(sharedGang("m", 1, 1, inventory.SharingMPS))
	var u *Unschedulable
	if !errors.As(err, &u) || u.Reason != ReasonNoMatchingNodes || !strings.Contains(u.Message, "sharing strategy") {
		t.Errorf("MPS member on time-sliced nodes: %v, want %s naming the sharing strategy", err, ReasonNoMatchingNodes)
	}
}

// Shares count in the shared class and in "" (one each), not in the
// product's classes.
func TestSharedQuota(t *testing.T) {
	s := NewSnapshot(sharedFleet(), nil)
	qs := []Queue{{Name: "team", Quotas: quotas("shared", Quota{Nominal: 3, BorrowingLimit: lim(0)},
		"h100", Quota{Nominal: 0, BorrowingLimit: lim(0)})}}
	var pending []Gang
	for _, id := range []string{"s0", "s1", "s2"} {
		g := sharedGang(id, 1, 1, "")
		g.Queue, g.Submitted = "team", t0
		pending = append(pending, g)
	}
	pending[2].GPUsPerMember = 2
	d := Schedule(s, Input{Now: t0, Pending: pending, Queues: qs})
	if got := placedIDs(d); len(got) != 2 || !got["s0"] || !got["s1"] {
		t.Fatalf("placed %v, want s0 and s1 (3 shares of quota, s2 asks for 2 more)", got)
	}
	want := "queue team would hold 4 GPU shares, quota nominal 3 + borrowing 0"
	if w := waitFor(d, "s2"); w == nil || w.Reason != ReasonQuota || w.Message != want {
		t.Errorf("s2 waits with %+v, want %q", w, want)
	}
	u := usage{}
	for _, al := range s.allocs.all() {
		s.addAllocUse(u, al)
	}
	if u["shared"] != 2 || u[""] != 2 || u["h100"] != 0 {
		t.Errorf("usage %v, want shared 2, \"\" 2, h100 0", u)
	}
}
