// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"math"
	"sort"
	"strings"
	"time"
)

// holdsFor allocates the per-node holder marks.
func (s *Snapshot) holdsFor() []int32 {
	if s.holders == nil {
		s.holders = make([]int32, len(s.nodes))
		for i := range s.holders {
			s.holders[i] = -1
		}
	}
	return s.holders
}

// clearHolds drops every reservation mark.
func (s *Snapshot) clearHolds() {
	s.version++
	s.holders, s.holdStart = nil, s.holdStart[:0]
	s.dindex.clearHeldCounts()
}

// hold marks nodes as held by a new reservation for gang (named after
// the domain they lie in).
func (c *cycle) hold(gang string, l int, d int32, nodes []int32, backfill bool) int32 {
	rid := int32(len(c.res))
	c.res = append(c.res, resv{gang: gang, level: l, dom: d, nodes: nodes, live: true})
	c.resByGang[gang] = rid
	c.resIDs.add(gang)
	start := c.in.Now.UnixNano()
	if backfill {
		if t, known := c.s.drainTime(nodes, start); known {
			start = t
		}
	}
	c.s.version++
	c.s.holdStart = append(c.s.holdStart, start)
	for _, i := range nodes {
		c.s.setHolder(i, rid)
		c.held += int(c.s.nodes[i].gpus)
	}
	return rid
}

// drop releases a reservation.
func (c *cycle) drop(rid int32) {
	r := &c.res[rid]
	if !r.live {
		return
	}
	r.live = false
	delete(c.resByGang, r.gang)
	for _, i := range r.nodes {
		if c.s.holders[i] == rid {
			c.s.setHolder(i, -1)
			c.held -= int(c.s.nodes[i].gpus)
		}
	}
}

// restoreReservations re-holds the previous cycle's reservations of gangs
// that still wait, so their nodes keep draining towards them.
func (c *cycle) restoreReservations() {
	if len(c.in.Reservations) == 0 {
		return
	}
	// Which reservations' gangs are pending: the reservations are few, the
	// pending gangs tens of thousands.
	held := make(map[string]bool, len(c.in.Reservations))
	var ids idFilter
	for _, r := range c.in.Reservations {
		held[r.Gang] = true
		ids.add(r.Gang)
	}
	pending := map[string]bool{}
	for _, g := range c.pending {
		if id := g.ID; ids.mayHold(id) && held[id] {
			pending[id] = true
		}
	}
	for _, r := range c.in.Reservations {
		l, ok := levelIndex(r.Level)
		if !ok || !pending[r.Gang] {
			continue
		}
		d, found := c.s.domainByName(l, r.Domain)
		if !found {
			continue
		}
		var nodes []int32
		for _, n := range r.Nodes {
			cluster, name, _ := strings.Cut(n, "/")
			if i, ok := c.s.nodeAt(cluster, name); ok && (c.s.holders == nil || c.s.holders[i] < 0) {
				nodes = append(nodes, i)
			}
		}
		if len(nodes) > 0 {
			c.hold(r.Gang, l, d, nodes, !c.waiting[r.Gang])
		}
	}
}

// domainByName finds a domain of a level by name.
func (s *Snapshot) domainByName(l int, name string) (int32, bool) {
	if s.names[l] == nil {
		s.names[l] = make(map[string]int32, len(s.levels[l]))
		for i := range s.levels[l] {
			s.names[l][s.levels[l][i].name] = int32(i)
		}
	}
	d, ok := s.names[l][name]
	return d, ok
}

// reserve holds nodes for a big gang at the head of its queue.
func (c *cycle) reserve(g *Gang, r *request) {
	if c.liveReservations() >= c.cfg.maxReservations {
		return
	}
	minGPUs := int32(c.cfg.reservationMinGPUs)
	if minGPUs == 0 {
		minGPUs = c.s.maxNode
	}
	if r.need*r.gpm < minGPUs {
		return
	}
	if l, d, nodes, ok := c.plan(r); ok {
		c.hold(g.ID, l, d, nodes, true)
	}
}

// plan picks what a reservation for r would hold: at the tightest level
// where some domain could hold the gang once empty, the domain with the
// most free GPUs now, and in it the nodes expected to drain first.
func (c *cycle) plan(r *request) (int, int32, []int32, bool) {
	need := r.need * r.gpm
	if c.held > 0 && float64(c.held+int(need)) > c.cfg.maxHeldFraction*float64(c.total) {
		return 0, 0, nil, false
	}
	top := min(r.ceil, lvCluster)
	for l := lvNode; l <= top; l++ {
		if (r.firstFit || !r.topology) && l < top {
			continue
		}
		if s := c.s; s.maxGPUs[l] < need {
			continue // no domain of the level has the GPUs (dom.gpus below)
		}
		best, bestFree := int32(-1), int32(-1)
		for ci := range c.s.clusters {
			if !r.clusterOK[ci] {
				continue
			}
			rg := c.s.clusters[ci].ranges[l]
			for d := rg[0]; d < rg[1]; d++ {
				dom := &c.s.levels[l][d]
				if r.mig == "" && c.s.dfree[l][d] <= bestFree {
					continue // its eligible nodes' free GPUs (domainSlots) cannot beat the best
				}
				if dom.gpus < need || c.s.capacitySlots(r, l, d) < r.need {
					continue
				}
				if _, f := c.s.domainSlots(r, l, int(d), 0); f > bestFree {
					best, bestFree = d, f
				}
			}
		}
		if best >= 0 {
			return l, best, c.s.drainSet(r, l, best, c.in.Now), true
		}
	}
	return 0, 0, nil, false
}

func (c *cycle) liveReservations() int {
	n := 0
	for _, r := range c.res {
		if r.live {
			n++
		}
	}
	return n
}

// capacitySlots counts the members that would fit in the domain if every
// eligible schedulable node were empty.
func (s *Snapshot) capacitySlots(r *request, l int, d int32) int32 {
	if k, ok := s.countedRoom(r, l, d); ok {
		return k
	}
	dom := &s.levels[l][d]
	var k int32
	for i := dom.lo; i < dom.hi; i++ {
		n := &s.nodes[i]
		if !r.classOK[n.class] || !n.schedulable || (s.holders != nil && s.holders[i] >= 0) {
			continue
		}
		k += s.capacity1(r, i)
	}
	return k
}

// drainSet picks the nodes of a domain to hold for r: the eligible, unheld
// nodes with the most free GPUs (they drain soonest) until, once empty, they
// hold every member.
func (s *Snapshot) drainSet(r *request, l int, d int32, now time.Time) []int32 {
	dom := &s.levels[l][d]
	var cands []int32
	for i := dom.lo; i < dom.hi; i++ {
		n := &s.nodes[i]
		if r.classOK[n.class] && n.schedulable && (s.holders == nil || s.holders[i] < 0) {
			cands = append(cands, i)
		}
	}
	release := s.releaseTimes(l, d, now)
	sort.SliceStable(cands, func(a, b int) bool {
		ra, rb := release[cands[a]-dom.lo], release[cands[b]-dom.lo]
		if ra != rb {
			return ra < rb
		}
		return s.nodes[cands[a]].free > s.nodes[cands[b]].free
	})
	var out []int32
	var k int32
	for _, i := range cands {
		if k >= r.need {
			break
		}
		if c := s.capacity1(r, i); c > 0 {
			out = append(out, i)
			k += c
		}
	}
	return out
}

// capacity1 is the members of r an empty node i would hold.
func (s *Snapshot) capacity1(r *request, i int32) int32 {
	n := &s.nodes[i]
	if r.mig != "" {
		if m := s.slice(i, r.mig); m != nil {
			return m.alloc / r.gpm
		}
		return 0
	}
	return n.gpus / r.gpm
}

// releaseTimes returns, for each node of a domain (indexed from its first
// node), the UnixNano when the last gang on it is expected to end (MaxInt64
// when one has no estimate); 0 for a node free now. It reads the per-node
// allocation lists (Snapshot.onNode), not every allocation.
func (s *Snapshot) releaseTimes(l int, d int32, now time.Time) []int64 {
	dom := &s.levels[l][d]
	out := make([]int64, dom.hi-dom.lo)
	for i := dom.lo; i < dom.hi; i++ {
		for _, al := range s.onNode[i] {
			if end := allocEnd(al, now); end > out[i-dom.lo] {
				out[i-dom.lo] = end
			}
		}
	}
	return out
}

// allocEnd is when a running gang is expected to end, UnixNano (MaxInt64
// without an estimate); one not started yet starts now.
func allocEnd(al *allocation, now time.Time) int64 {
	if al.Gang.Estimate > 0 {
		return al.startedBy(now).Add(al.Gang.Estimate).UnixNano()
	}
	return math.MaxInt64
}

// drainTime is when all the nodes are expected to be free: the latest
// estimated end of the gangs on them, never before now; known is false when
// one of those gangs has no estimate.
func (s *Snapshot) drainTime(nodes []int32, now int64) (t int64, known bool) {
	t = now
	for _, i := range nodes {
		for _, al := range s.onNode[i] {
			if al.Gang.Estimate <= 0 {
				return now, false
			}
			t = max(t, al.startedBy(time.Unix(0, now)).Add(al.Gang.Estimate).UnixNano())
		}
	}
	return t, true
}
