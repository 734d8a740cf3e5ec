// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

func TestPlaceTable(t *testing.T) {
	hgx := fleetSpec{name: "eu1", racks: 2, perRack: 4, gpus: 8, blockOf: 2}.cluster()
	// Fragment node r00-n00 and r00-n01 to 4 free each.
	hgx.Nodes[0].UsedGPUs, hgx.Nodes[1].UsedGPUs = 4, 4
	nvl := fleetSpec{name: "us1", racks: 2, perRack: 4, gpus: 4, product: "GB200", clique: true}.cluster()
	tainted := fleetSpec{name: "ap1", racks: 1, perRack: 2, gpus: 8}.cluster()
	for i := range tainted.Nodes {
		tainted.Nodes[i].Taints = []corev1.Taint{{Key: "maint", Effect: corev1.TaintEffectNoSchedule}}
	}
	mig := inventory.Cluster{Name: "mig1", Nodes: []inventory.Node{{Name: "m0", Product: "A100", Ready: true,
		MIG: map[string]inventory.MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7, Used: 5}}}}}
	fleet := []inventory.Cluster{hgx, nvl, tainted, mig}

	tests := []struct {
		name      string
		gang      Gang
		opts      []PlaceOption
		wantLevel inventory.Level
		wantNodes int
		reason    Reason
		msg       string
	}{
		{name: "4+4 never fits an 8-GPU member, so the fragmented pair is skipped",
			gang: newGang("a", 1, 8).products("H100").obj(), wantLevel: inventory.LevelNode, wantNodes: 1},
		{name: "two 4-GPU members binpack into one fragmented node? no: one per half-free node is worse",
			gang: newGang("b", 1, 4).products("H100").obj(), wantLevel: inventory.LevelNode, wantNodes: 1},
		{name: "8 members of 4 GPUs fill one NVL clique",
			gang: newGang("c", 4, 4).products("GB200").obj(), wantLevel: inventory.LevelNVLink, wantNodes: 4},
		{name: "rack required: 5×8 does not fit a 4-node rack",
			gang:   newGang("d", 5, 8).products("H100").required(inventory.LevelRack).obj(),
			reason: ReasonTopology, msg: "needs 5×8 GPUs of H100 in one rack; the largest free rack has 4×8 (eu1/rack:r01)"},
		{name: "block holds it", gang: newGang("e", 5, 8).products("H100").required(inventory.LevelBlock).obj(),
			wantLevel: inventory.LevelBlock, wantNodes: 5},
		{name: "too many GPUs", gang: newGang("f", 100, 8).obj(), reason: ReasonInsufficientGPUs},
		{name: "fragmented", gang: newGang("g", 7, 8).products("H100").obj(), reason: ReasonFragmented},
		{name: "taint not tolerated", gang: newGang("h", 1, 8).obj(), opts: nil},
		{name: "mig slices", gang: newGang("i", 2, 1).mig("nvidia.com/mig-1g.10gb").obj(),
			wantLevel: inventory.LevelNode, wantNodes: 1},
		{name: "mig too many", gang: newGang("j", 3, 1).mig("nvidia.com/mig-1g.10gb").obj(), reason: ReasonInsufficientGPUs},
		{name: "two clusters when allowed", gang: newGang("k", 16, 4).maxClusters(2).obj(), wantNodes: 10},
		{name: "one cluster by default", gang: newGang("l", 16, 4).obj(), reason: ReasonTopology},
		{name: "no product", gang: newGang("m", 1, 1).products("B300").obj(), reason: ReasonNoMatchingNodes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSnapshot(fleet, nil)
			p, err := s.Place(tt.gang, tt.opts...)
			if tt.reason != "" {
				var u *Unschedulable
				if !errors.As(err, &u) || u.Reason != tt.reason {
					t.Fatalf("err = %v, want reason %s (placement %+v)", err, tt.reason, p)
				}
				if tt.msg != "" && u.Message != tt.msg {
					t.Errorf("message = %q, want %q", u.Message, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			checkPlacement(t, s, tt.gang, p)
			if tt.wantLevel != "" && p.Level != tt.wantLevel {
				t.Errorf("level = %s, want %s (%+v)", p.Level, tt.wantLevel, p)
			}
			if tt.wantNodes > 0 && len(p.Assignments) != tt.wantNodes {
				t.Errorf("nodes = %d, want %d (%+v)", len(p.Assignments), tt.wantNodes, p)
			}
			for _, a := range p.Assignments {
				if a.Cluster == "ap1" {
					t.Errorf("placed on tainted node %s", a.Node)
				}
			}
		})
	}
}

// checkPlacement asserts whole gang, exact fit and booking.
func checkPlacement(t *testing.T, s *Snapshot, g Gang, p Placement) {
	t.Helper()
	members := 0
	for _, a := range p.Assignments {
		members += a.Members
	}
	if members != g.Members {
		t.Fatalf("placed %d members, want %d", members, g.Members)
	}
	if err := s.Assume(g, p, time.Time{}); err != nil {
		t.Fatalf("Assume: %v", err)
	}
}

func TestPlaceBinPackPrefersFullestNode(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 3, gpus: 8}.cluster()
	c.Nodes[1].UsedGPUs = 6
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	p, err := s.Place(newGang("a", 1, 2).obj())
	if err != nil || p.Assignments[0].Node != "r00-n01" {
		t.Fatalf("got %+v, %v; want the fullest node r00-n01", p, err)
	}
	p, err = s.Place(newGang("b", 1, 2).policy(Spread).obj())
	if err != nil || p.Assignments[0].Node == "r00-n01" {
		t.Fatalf("spread got %+v, %v", p, err)
	}
}

func TestPlaceMessageMentionsShape(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	_, err := s.Place(newGang("a", 3, 8).obj())
	if err == nil || !strings.Contains(err.Error(), "3×8 GPUs") {
		t.Fatalf("err = %v", err)
	}
}

func TestPlacementExplain(t *testing.T) {
	c := fleetSpec{name: "eu1", racks: 2, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	g := newGang("a", 2, 8).required(inventory.LevelRack).obj()
	g.Topology.Preferred = inventory.LevelNVLink
	p, err := s.Place(g)
	if err != nil {
		t.Fatal(err)
	}
	want := "2×8 GPUs on 2 nodes in one rack (eu1/rack:r00); preferred nvlink: no nvlink domain had room; required rack kept"
	if got := p.Explain(g); got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
}
