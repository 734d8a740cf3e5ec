// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"testing"

	"github.com/shoal-dev/shoal/federation/inventory"
)

func TestMinDomains(t *testing.T) {
	c := fleetSpec{name: "c", racks: 2, perRack: 4, gpus: 8}.cluster()
	c.Nodes[2].UsedGPUs, c.Nodes[3].UsedGPUs = 4, 8 // rack r00 free: 8, 8, 4, 0; r01: 8, 8, 8, 8
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	tests := []struct {
		name         string
		gang         Gang
		nvlink, rack int
	}{
		{"fits one rack", newGang("a", 3, 8).obj(), 3, 1},
		{"needs two racks", newGang("b", 6, 8).obj(), 6, 2},
		{"required rack cannot hold it", newGang("c", 6, 8).required(inventory.LevelRack).obj(), 0, 0},
		{"two members share a node", newGang("d", 2, 4).obj(), 1, 1},
		{"fragment counts", newGang("e", 1, 4).obj(), 1, 1},
		{"does not fit", newGang("f", 20, 8).obj(), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.MinDomains(tt.gang, inventory.LevelNVLink); got != tt.nvlink {
				t.Errorf("nvlink = %d, want %d", got, tt.nvlink)
			}
			if got := s.MinDomains(tt.gang, inventory.LevelRack); got != tt.rack {
				t.Errorf("rack = %d, want %d", got, tt.rack)
			}
			p, err := s.Place(tt.gang)
			if err != nil {
				return
			}
			// The engine's own placement reaches the minimum.
			if got := s.DomainsUsed(p, inventory.LevelRack); got != tt.rack {
				t.Errorf("placement uses %d racks, minimum %d: %+v", got, tt.rack, p)
			}
			if got := s.DomainsUsed(p, inventory.LevelNVLink); got != tt.nvlink {
				t.Errorf("placement uses %d NVLink domains, minimum %d: %+v", got, tt.nvlink, p)
			}
		})
	}
}

func TestPlaceSpreadDealsMembers(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	p, err := s.Place(newGang("a", 4, 2).policy(Spread).required(inventory.LevelRack).obj())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Assignments) != 4 {
		t.Errorf("spread over %d nodes, want 4: %+v", len(p.Assignments), p)
	}
	p, err = s.Place(newGang("b", 4, 2).obj())
	if err != nil || len(p.Assignments) != 1 {
		t.Errorf("binpack = %+v, %v; want one node", p, err)
	}
}
