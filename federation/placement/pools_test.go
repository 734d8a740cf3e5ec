// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// TestPlaceOnlyInTheQueuesPools: a gang with pools lands only on nodes of
// one of them (cluster, product and node pool), and waits when none has
// room; a pool that names no cluster holds no node.
func TestPlaceOnlyInTheQueuesPools(t *testing.T) {
	a := fleetSpec{name: "a", racks: 1, perRack: 2, gpus: 8}.cluster()
	b := fleetSpec{name: "b", racks: 1, perRack: 2, gpus: 8}.cluster()
	a.Nodes[0].NodePool, a.Nodes[1].NodePool = "serve", "train"
	b.Nodes[0].NodePool, b.Nodes[1].NodePool = "train", "train"
	s := NewSnapshot([]inventory.Cluster{a, b}, nil)
	g := newGang("g", 1, 8).obj()
	g.Pools = []PoolFilter{{Clusters: []string{"a"}, NodePools: []string{"train"}}}
	p, err := s.Place(g)
	if err != nil || p.Assignments[0].Cluster != "a" || p.Assignments[0].Node != "r00-n01" {
		t.Fatalf("got %+v, %v; want a/r00-n01, the only train node of cluster a", p, err)
	}
	if err := s.Assume(g, p, time.Time{}); err != nil {
		t.Fatal(err)
	}
	g.ID = "g2"
	if _, err := s.Place(g); err == nil {
		t.Fatal("a second gang was placed outside its pool")
	}
	g.Pools = append(g.Pools, PoolFilter{Clusters: []string{"b"}, Products: []string{"H100"}})
	if p, err := s.Place(g); err != nil || p.Assignments[0].Cluster != "b" {
		t.Fatalf("with a second pool in b: %+v, %v", p, err)
	}
	g.Pools = []PoolFilter{{}}
	if _, err := s.Place(g); err == nil {
		t.Fatal("a pool of no cluster placed a gang")
	}
}
