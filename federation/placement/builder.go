// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// Builder builds a scheduling cycle's Snapshot from the clusters'
// inventories, reusing the layout of its last build: the nodes' order,
// domains, classes and names, which at a fleet of 100,000 nodes cost most
// of a fresh NewSnapshot and change only when a node or cluster comes or
// goes or a node's topology, product, taints, pool or allocatable GPUs
// change. Between such changes a build copies the layout and reads only the
// counts (usage, schedulable, MIG slices and shares) of every node again,
// then sums the domains and indexes afresh, so the Snapshot it returns is
// the one NewSnapshot would build from the same arguments, field for field.
// The zero Builder is ready; it is not safe for concurrent use.
type Builder struct {
	layout *Snapshot            // the last build's layout (no allocations)
	invs   []inventory.Cluster  // the inventories it was laid out or last built from, sorted
	pos    [][]int32            // [cluster][k]: the snapshot node of the cluster's k-th inventory node
	found  map[string]*resolved // by gang: the allocations' nodes of the builds since the layout
	gen    uint64               // builds
	// Layouts counts the builds that laid the fleet out afresh, and
	// LayoutReason says why the last did (what changed first).
	Layouts      int
	LayoutReason string
}

// Snapshot is NewSnapshot(clusters, running), built on the last build's
// layout where the clusters' layout did not change, with the nodes of the
// running gangs' assignments found by the last build where they did not
// change either. The inventories and the allocations' assignments must
// not be changed while the Builder holds them (until the next build).
func (b *Builder) Snapshot(clusters []inventory.Cluster, running []Allocation) *Snapshot {
	cs := sortedClusters(clusters)
	why := "first build"
	if b.layout != nil {
		why = layoutChange(b.invs, cs)
	}
	if why != "" {
		b.layout, b.pos = newLayout(cs)
		b.Layouts++
		b.LayoutReason = why
		b.found = nil
	}
	b.invs = cs
	s := b.layout.withCounts(cs, b.pos)
	if b.found == nil {
		b.found = map[string]*resolved{}
	}
	b.gen++
	s.addRunning(running, func(a *Allocation) []int32 {
		r := b.found[a.Gang.ID]
		if r == nil {
			r = &resolved{}
			b.found[a.Gang.ID] = r
		}
		if r.at == nil || !slices.Equal(r.assignments, a.Assignments) {
			r.assignments, r.at = a.Assignments, make([]int32, len(a.Assignments))
			for k, as := range a.Assignments {
				i, ok := s.nodeAt(as.Cluster, as.Node)
				if !ok {
					i = -1
				}
				r.at[k] = i
			}
		}
		r.seen = b.gen
		return r.at
	})
	for id, r := range b.found {
		if r.seen != b.gen {
			delete(b.found, id)
		}
	}
	return s
}

// resolved is an allocation's assignments and the index of each one's
// node in the layout (-1: not in it), kept from one build to the next
// while the layout holds, so that 20,000 running gangs are not looked up
// node by node by name every cycle.
type resolved struct {
	assignments []Assignment
	at          []int32
	seen        uint64 // the build that last had the gang (Builder.gen)
}

// withCounts is a snapshot with s's layout (shared: nothing a cycle
// changes) and the counts of the inventories cs, laid out as s by pos;
// its free GPUs and indexes are summed by addRunning (resum).
func (s *Snapshot) withCounts(cs []inventory.Cluster, pos [][]int32) *Snapshot {
	t := &Snapshot{clusters: s.clusters, classes: s.classes, nodeIndex: s.nodeIndex, pos: s.pos, uniqueNames: s.uniqueNames,
		trivial: s.trivial, maxNode: s.maxNode, maxGPUs: s.maxGPUs,
		allocs: map[string]*allocation{}, runSums: map[runKey]int{}, offAllocs: map[string]*allocation{},
		cdHeld: map[string]int{}}
	t.nodes = slices.Clone(s.nodes)
	for ci := range cs {
		for k := range cs[ci].Nodes {
			t.nodes[pos[ci][k]].setCounts(&cs[ci].Nodes[k])
		}
	}
	t.onNode = make([][]*allocation, len(t.nodes))
	t.levels = s.levels // shared; their free GPUs (dfree) are summed by addRunning
	return t
}

// layoutChange says what keeps clusters b from laying out as a did
// ("" when nothing does): they must be the same clusters, each with the
// same nodes in the same order and the same layout (sameNodeLayout).
func layoutChange(a, b []inventory.Cluster) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d clusters, were %d", len(b), len(a))
	}
	for ci := range a {
		x, y := &a[ci], &b[ci]
		switch {
		case x.Name != y.Name:
			return fmt.Sprintf("cluster %s in place of %s", y.Name, x.Name)
		case x.ComputeDomains != y.ComputeDomains || !maps.Equal(x.Labels, y.Labels):
			return fmt.Sprintf("cluster %s: labels or compute domains", y.Name)
		case len(x.Nodes) != len(y.Nodes):
			return fmt.Sprintf("cluster %s: %d nodes, were %d", y.Name, len(y.Nodes), len(x.Nodes))
		}
		for k := range x.Nodes {
			if !sameNodeLayout(&x.Nodes[k], &y.Nodes[k]) {
				return fmt.Sprintf("cluster %s: node %s (was %s): name, topology, allocatable GPUs, product, taints, pool, sharing or DRA devices",
					y.Name, y.Nodes[k].Name, x.Nodes[k].Name)
			}
		}
	}
	return ""
}

// sameNodeLayout reports whether two reports of a node agree on all that
// newNode and domainKeys read but setCounts: name, topology, allocatable
// GPUs and what makes its class.
func sameNodeLayout(a, b *inventory.Node) bool {
	if a.Name != b.Name || a.Product != b.Product || a.GPUs != b.GPUs || a.Clique != b.Clique || a.Rack != b.Rack ||
		a.Block != b.Block || a.NodePool != b.NodePool || a.Shared.Requestable() != b.Shared.Requestable() ||
		!slices.EqualFunc(a.Taints, b.Taints, sameTaint) {
		return false
	}
	if a.Shared.Requestable() && a.Shared.Strategy != b.Shared.Strategy {
		return false
	}
	if (a.DRADevices == nil) != (b.DRADevices == nil) {
		return false
	}
	return a.DRADevices == nil || a.DRADevices == b.DRADevices || a.DRADevices.Key() == b.DRADevices.Key()
}

// sameTaint compares two taints by what toleration matching reads (not
// TimeAdded).
func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}
