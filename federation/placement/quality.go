// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"slices"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// MinDomains returns the fewest domains of level l that could hold gang g
// right now, within its filters and required level (0 if it fits nowhere).
// The simulator compares it with DomainsUsed to score placements.
func (s *Snapshot) MinDomains(g Gang, l inventory.Level) int {
	li, ok := levelIndex(l)
	if !ok || validate(&g) != nil {
		return 0
	}
	r := s.newRequest(&g, params{})
	best := 0
	consider := func(k int) {
		if k > 0 && (best == 0 || k < best) {
			best = k
		}
	}
	ceil := min(r.ceil, lvCluster)
	if li >= ceil {
		if _, _, _, fits := s.place(r); fits {
			return 1
		}
		return 0
	}
	for d := range s.levels[ceil] {
		dom := &s.levels[ceil][d]
		if !r.clusterOK[dom.cluster] || (r.mig == "" && s.dfree[ceil][d] < r.need*r.gpm) {
			continue
		}
		lo, hi := s.nodes[dom.lo].dom[li], s.nodes[dom.hi-1].dom[li]+1
		consider(s.fewest(r, li, lo, hi))
	}
	if best == 0 && r.ceil == lvFleet {
		consider(s.fewest(r, li, 0, int32(len(s.levels[li]))))
	}
	return best
}

// fewest counts the domains [lo,hi) of level l needed to hold r, largest first.
func (s *Snapshot) fewest(r *request, l int, lo, hi int32) int {
	slots := int32s(&s.scratch.slots[0], int(hi-lo))
	for d := lo; d < hi; d++ {
		slots[d-lo], _ = s.domainSlots(r, l, int(d), 0)
	}
	slices.Sort(slots)
	need := r.need
	for k := len(slots) - 1; k >= 0 && slots[k] > 0; k-- {
		need -= slots[k]
		if need <= 0 {
			return len(slots) - k
		}
	}
	return 0
}

// DomainsUsed counts the distinct domains of level l a placement touches.
func (s *Snapshot) DomainsUsed(p Placement, l inventory.Level) int {
	li, ok := levelIndex(l)
	if !ok {
		return 0
	}
	seen := map[int64]bool{}
	for _, a := range p.Assignments {
		if i, ok := s.nodeAt(a.Cluster, a.Node); ok {
			n := &s.nodes[i]
			seen[int64(n.cluster)<<32|int64(n.dom[li])] = true
		}
	}
	return len(seen)
}
