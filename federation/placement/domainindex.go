// SPDX-License-Identifier: Apache-2.0

package placement

// maxIndexedGPUs bounds the GPUs per node the domain index keeps sums for:
// it holds one sum per member size 1..maxNode for every domain.
const maxIndexedGPUs = 64

// domainIndex keeps, for every domain above the node level, running sums
// per member size g (1..stride GPUs) so that the members of a whole-GPU
// request a domain holds are read, not counted node by node:
//
//	slots[g]: Σ ⌊free/g⌋ over the domain's nodes
//	efree[g]: Σ free over the nodes with free ≥ g (the free GPUs of the
//	          nodes where a member fits: what best fit compares)
//	room[g]:  Σ ⌊gpus/g⌋ over its schedulable nodes (what it would hold
//	          empty, for reservations)
//
// the same sums over its held nodes alone, and the count of its held and of
// its unschedulable nodes; and, per level and member size, the domains
// bucketed by slots (bucketIndex), so that best fit visits only the
// domains that could win (bestDomainIndexed). setFree, SetNodeSchedulable
// and the reservation marks keep them current, so the index is never
// rebuilt. A sum answers only for a request whose node filters take a
// whole cluster or none of it, and for a domain with held nodes only when
// the request may use none of them; anything else is counted node by node
// as before (countedSlots).
type domainIndex struct {
	stride int32 // member sizes indexed (maxNode); 0: index off
	// own[l] is the level whose sums level l shares: a level with exactly
	// the domains of the level below shares its sums. own[l] == lvNode
	// means none (domains of single nodes are read from the node).
	own       [numLevels]int
	all, hold sums               // over every node; over the held nodes
	held      [numLevels][]int32 // [d] held nodes
	down      [numLevels][]int32 // [d] unschedulable nodes
	heldNodes int                // nodes held now, over the fleet
	// heldDoms[l] lists the domains of level l (l == own[l]) that got a
	// held node since the marks were last cleared (some may have none now).
	heldDoms [numLevels][]int32
	buckets  [numLevels]*bucketIndex
}

// sums are the per-member-size sums of domainIndex, [l][d*stride + g-1].
type sums struct{ slots, efree, room [numLevels][]int32 }

// bucketIndex lists one level's domains by slots for each member size:
// head[g-1][k] is the first domain holding exactly k members of g GPUs.
type bucketIndex struct {
	n          int32 // domains of the level
	head       [][]int32
	top        []int32 // [g-1]: no bucket above it holds a domain (topOf)
	next, prev []int32 // [(g-1)*n + d]
}

func (b *bucketIndex) push(g, k, d int32) {
	at := (g-1)*b.n + d
	h := b.head[g-1][k]
	b.prev[at], b.next[at] = -1, h
	if h >= 0 {
		b.prev[(g-1)*b.n+h] = d
	}
	b.head[g-1][k] = d
	b.top[g-1] = max(b.top[g-1], k)
}

func (b *bucketIndex) remove(g, k, d int32) {
	at := (g-1)*b.n + d
	if p := b.prev[at]; p >= 0 {
		b.next[(g-1)*b.n+p] = b.next[at]
	} else {
		b.head[g-1][k] = b.next[at]
	}
	if nx := b.next[at]; nx >= 0 {
		b.prev[(g-1)*b.n+nx] = b.prev[at]
	}
}

// topOf lowers the top of size g to the highest bucket holding a domain
// (remove leaves it high, so that moves stay O(1)) and returns it.
func (b *bucketIndex) topOf(g int32) int32 {
	for b.top[g-1] > 0 && b.head[g-1][b.top[g-1]] < 0 {
		b.top[g-1]--
	}
	return b.top[g-1]
}

// buildDomainIndex sums the nodes into every domain's counters, in
// spare's arrays where they fit (the index of a dead snapshot of the same
// layout: a Builder's), so that a cycle does not allocate them anew.
func (s *Snapshot) buildDomainIndex(spare *domainIndex) {
	x := &s.dindex
	var old domainIndex
	if spare != nil {
		old = *spare
	}
	*x = domainIndex{}
	if s.maxNode <= 0 || s.maxNode > maxIndexedGPUs {
		return
	}
	x.stride = s.maxNode
	for l := lvNVLink; l < numLevels; l++ {
		x.own[l] = l
		if s.trivial[l] {
			x.own[l] = x.own[l-1]
		}
		if x.own[l] != l {
			for _, m := range []*sums{&x.all, &x.hold} {
				m.slots[l], m.efree[l], m.room[l] = m.slots[l-1], m.efree[l-1], m.room[l-1]
			}
			x.held[l], x.down[l] = x.held[l-1], x.down[l-1]
			continue
		}
		n := len(s.levels[l])
		for k, m := range []*sums{&x.all, &x.hold} {
			o := [...]*sums{&old.all, &old.hold}[k]
			m.slots[l] = zeroed(o.slots[l], n*int(x.stride))
			m.efree[l] = zeroed(o.efree[l], n*int(x.stride))
			m.room[l] = zeroed(o.room[l], n*int(x.stride))
		}
		x.held[l] = zeroed(old.held[l], n)
		x.down[l] = zeroed(old.down[l], n)
	}
	x.sumLevels(s)
	x.bucketDomains(s, &old)
}

// bucketDomains lists every domain in its buckets by the sums, in old's
// arrays where they fit (the index of a dead snapshot of the same layout),
// in one order whatever order the sums were changed in: domain by domain,
// the lowest first in each bucket.
func (x *domainIndex) bucketDomains(s *Snapshot, old *domainIndex) {
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] != l {
			x.buckets[l] = x.buckets[x.own[l]]
			continue
		}
		n := int32(len(s.levels[l]))
		b := &bucketIndex{n: n}
		if o := old.buckets[l]; o != nil && old.own[l] == l && o.n == n && len(o.head) == int(x.stride) {
			// The same layout's: every next and prev is set again by push.
			b.head, b.top, b.next, b.prev = o.head, o.top, o.next, o.prev
			clear(b.top)
		} else {
			b.head, b.top = make([][]int32, x.stride), make([]int32, x.stride)
			b.next, b.prev = make([]int32, n*x.stride), make([]int32, n*x.stride)
		}
		for g := int32(1); g <= x.stride; g++ {
			if len(b.head[g-1]) != int(s.maxGPUs[l]/g+1) {
				b.head[g-1] = make([]int32, s.maxGPUs[l]/g+1)
			}
			for k := range b.head[g-1] {
				b.head[g-1][k] = -1
			}
			for d := n - 1; d >= 0; d-- {
				b.push(g, x.all.slots[l][d*x.stride+g-1], d)
			}
		}
		x.buckets[l] = b
	}
}

// bucketsFit reports whether x has buckets of s's layout at every level
// with sums of its own (sized for its domains, member sizes and slots), so
// that a recount can keep them.
func (x *domainIndex) bucketsFit(s *Snapshot) bool {
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] != l {
			continue
		}
		b := x.buckets[l]
		if b == nil || int(b.n) != len(s.levels[l]) || len(b.head) != int(x.stride) {
			return false
		}
		for g := int32(1); g <= x.stride; g++ {
			if len(b.head[g-1]) != int(s.maxGPUs[l]/g+1) {
				return false
			}
		}
	}
	return true
}

// zeroed is buf cleared to n zeros if it has room, else a new array.
func zeroed(buf []int32, n int) []int32 {
	if cap(buf) < n {
		return make([]int32, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// sumLevels sums the nodes into the lowest level with sums of its own, and
// every level above from its child domains one level down (domains nest,
// so a domain's sums are its children's): a fleet of 100,000 nodes is
// visited once, not once per level.
func (x *domainIndex) sumLevels(s *Snapshot) {
	base := -1
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] != l {
			continue
		}
		if base < 0 {
			base = l
			for i := range s.nodes {
				n := &s.nodes[i]
				x.addAt(l, &x.all, n, n.free, 1)
				x.addRoomAt(l, &x.all, n, 1)
				if !n.schedulable {
					x.down[l][n.dom[l]]++
				}
			}
			continue
		}
		st := int(x.stride)
		for d := range s.levels[l] {
			dom := &s.levels[l][d]
			for c := int(dom.clo); c < int(dom.chi); c++ {
				for _, a := range [...][2][]int32{{x.all.slots[l], x.all.slots[l-1]}, {x.all.efree[l], x.all.efree[l-1]},
					{x.all.room[l], x.all.room[l-1]}} {
					to, from := a[0][d*st:d*st+st], a[1][c*st:c*st+st]
					for g := range to {
						to[g] += from[g]
					}
				}
				x.down[l][d] += x.down[l-1][c]
			}
		}
	}
}

// isHeld reports whether node i carries a reservation mark.
func (s *Snapshot) isHeld(i int32) bool { return s.holders != nil && s.holders[i] >= 0 }

// indexFree re-counts node i, whose free GPUs change from old to free, in
// the sums and buckets of its domains (setFree).
func (s *Snapshot) indexFree(i, old, free int32) {
	x := &s.dindex
	if x.stride == 0 {
		return
	}
	n := &s.nodes[i]
	if s.isHeld(i) {
		x.add(&x.hold, n, old, -1)
		x.add(&x.hold, n, free, 1)
	}
	var dks [maxIndexedGPUs]int32 // the change of slots per member size, the same at every level
	for g := int32(1); g <= x.stride; g++ {
		dks[g-1] = free/g - old/g
	}
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] != l {
			continue
		}
		d := n.dom[l]
		base := d * x.stride
		sl, ef := x.all.slots[l][base:base+x.stride], x.all.efree[l][base:base+x.stride]
		b := x.buckets[l]
		for g := int32(1); g <= x.stride; g++ {
			if dk := dks[g-1]; dk != 0 {
				b.remove(g, sl[g-1], d)
				b.push(g, sl[g-1]+dk, d)
				sl[g-1] += dk
			}
			if old >= g {
				ef[g-1] -= old
			}
			if free >= g {
				ef[g-1] += free
			}
		}
	}
}

// indexSchedulable re-counts node i's room and down count around a change
// of its schedulable flag: sign -1 before the change, 1 after.
func (s *Snapshot) indexSchedulable(i int32, sign int32) {
	x := &s.dindex
	if x.stride == 0 {
		return
	}
	n := &s.nodes[i]
	x.addRoom(&x.all, n, sign)
	if s.isHeld(i) {
		x.addRoom(&x.hold, n, sign)
	}
	if !n.schedulable {
		x.addDown(n, sign)
	}
}

// add adds (sign 1) or removes (sign -1) a node with free GPUs to the free
// sums m of its domains.
func (x *domainIndex) add(m *sums, n *node, free int32, sign int32) {
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] == l {
			x.addAt(l, m, n, free, sign)
		}
	}
}

// addAt is add at level l alone.
func (x *domainIndex) addAt(l int, m *sums, n *node, free int32, sign int32) {
	if free <= 0 {
		return
	}
	base := n.dom[l] * x.stride
	sl, ef := m.slots[l][base:base+x.stride], m.efree[l][base:base+x.stride]
	for g := int32(1); g <= min(free, x.stride); g++ {
		sl[g-1] += sign * (free / g)
		ef[g-1] += sign * free
	}
}

// addRoom adds (sign 1) or removes (-1) a schedulable node's room to m.
func (x *domainIndex) addRoom(m *sums, n *node, sign int32) {
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] == l {
			x.addRoomAt(l, m, n, sign)
		}
	}
}

// addRoomAt is addRoom at level l alone.
func (x *domainIndex) addRoomAt(l int, m *sums, n *node, sign int32) {
	if !n.schedulable {
		return
	}
	base := n.dom[l] * x.stride
	rm := m.room[l][base : base+x.stride]
	for g := int32(1); g <= min(n.gpus, x.stride); g++ {
		rm[g-1] += sign * (n.gpus / g)
	}
}

func (x *domainIndex) addDown(n *node, sign int32) {
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] == l {
			x.down[l][n.dom[l]] += sign
		}
	}
}

// setHolder marks node i held by reservation rid (-1: not held), keeping
// the held counts and sums of its domains.
func (s *Snapshot) setHolder(i, rid int32) {
	s.version++
	h := s.holdsFor()
	was, now := h[i] >= 0, rid >= 0
	h[i] = rid
	x := &s.dindex
	if was == now || x.stride == 0 {
		return
	}
	d := int32(1)
	if was {
		d = -1
	}
	n := &s.nodes[i]
	x.heldNodes += int(d)
	x.add(&x.hold, n, n.free, d)
	x.addRoom(&x.hold, n, d)
	for l := lvNVLink; l < numLevels; l++ {
		if x.own[l] == l {
			dom := n.dom[l]
			x.held[l][dom] += d
			if d > 0 && x.held[l][dom] == 1 {
				x.heldDoms[l] = append(x.heldDoms[l], dom)
			}
		}
	}
}

// clearHeldCounts forgets every held mark's count and sums (clearHolds).
func (x *domainIndex) clearHeldCounts() {
	for l := lvNVLink; l < numLevels; l++ {
		if x.heldNodes > 0 && x.own[l] == l {
			clear(x.held[l])
			clear(x.hold.slots[l])
			clear(x.hold.efree[l])
			clear(x.hold.room[l])
		}
		x.heldDoms[l] = x.heldDoms[l][:0]
	}
	x.heldNodes = 0
}

// mayUseHeld reports whether r may use a node some reservation holds: it
// is the holder, or it would end before the held nodes are due (slots).
func (s *Snapshot) mayUseHeld(r *request) bool {
	for h, start := range s.holdStart {
		if int32(h) == r.holder || r.endsAt <= start {
			return true
		}
	}
	return false
}

// Cluster fit of a request's node filters (request.fit).
const (
	fitNone  int8 = iota // no node of the cluster passes
	fitAll               // every node of the cluster passes
	fitMixed             // some do: count node by node
)

// classFit sets r.fit: per cluster, whether r's class filter takes all of
// the cluster's nodes, none, or some.
func (s *Snapshot) classFit(r *request, buf *[]int8) {
	fit := (*buf)[:0]
	if cap(fit) < len(s.clusters) {
		fit = make([]int8, len(s.clusters))
	}
	fit = fit[:len(s.clusters)]
	seen := s.scratch.bools(&s.scratch.seen, len(s.clusters))
	for c := range fit {
		fit[c] = fitNone
	}
	for k := range s.classes {
		c := s.classes[k].cluster
		f := fitNone
		if r.classOK[k] {
			f = fitAll
		}
		switch {
		case !seen[c]:
			fit[c], seen[c] = f, true
		case fit[c] != f:
			fit[c] = fitMixed
		}
	}
	*buf = fit
	r.fit = fit
}

// countedSlots answers domainSlots from the index: ok is false when the
// domain must be counted node by node (MIG, a cluster whose nodes the
// filters split, held nodes, a level without sums).
func (s *Snapshot) countedSlots(r *request, l int, d int32) (slots, free int32, ok bool) {
	x := &s.dindex
	if x.stride == 0 || r.mig != "" || r.fit == nil || l == lvNode {
		return 0, 0, false
	}
	dom := &s.levels[l][d]
	switch r.fit[dom.cluster] {
	case fitNone:
		return 0, 0, true
	case fitMixed:
		return 0, 0, false
	}
	if r.within >= 0 {
		if l <= r.within {
			if s.nodes[dom.lo].dom[r.within] != r.withinDom {
				return 0, 0, true
			}
		} else {
			// A domain above the within domain holds what the within
			// domain holds, or nothing.
			w := &s.levels[r.within][r.withinDom]
			if s.nodes[w.lo].dom[l] != d {
				return 0, 0, true
			}
			l, d = r.within, r.withinDom
			if l == lvNode {
				return 0, 0, false
			}
		}
	}
	if r.gpm > x.stride {
		return 0, 0, true
	}
	if x.own[l] == lvNode {
		return 0, 0, false
	}
	k := d*x.stride + r.gpm - 1
	if x.held[l][d] > 0 {
		if s.mayUseHeld(r) {
			return 0, 0, false
		}
		// Held nodes give r nothing (slots).
		return x.all.slots[l][k] - x.hold.slots[l][k], x.all.efree[l][k] - x.hold.efree[l][k], true
	}
	return x.all.slots[l][k], x.all.efree[l][k], true
}

// countedRoom answers capacitySlots from the index; ok as for countedSlots.
func (s *Snapshot) countedRoom(r *request, l int, d int32) (int32, bool) {
	x := &s.dindex
	if x.stride == 0 || r.mig != "" || r.fit == nil || l == lvNode || x.own[l] == lvNode {
		return 0, false
	}
	switch r.fit[s.levels[l][d].cluster] {
	case fitNone:
		return 0, true
	case fitMixed:
		return 0, false
	}
	if r.gpm > x.stride {
		return 0, true
	}
	k := d*x.stride + r.gpm - 1
	return x.all.room[l][k] - x.hold.room[l][k], true // held nodes count as full (capacitySlots)
}

// countedMatches answers explain's sums over one cluster (cluster-level
// domain d) from the index: the nodes r's filters take, those of them not
// schedulable, the members that fit and the free GPUs; ok as for
// countedSlots.
func (s *Snapshot) countedMatches(r *request, d int32) (nodes, down, slots, free int32, ok bool) {
	x := &s.dindex
	dom := &s.levels[lvCluster][d]
	if x.stride == 0 || r.mig != "" || r.fit == nil || x.own[lvCluster] == lvNode {
		return 0, 0, 0, 0, false
	}
	if r.fit[dom.cluster] == fitNone {
		return 0, 0, 0, 0, true
	}
	slots, _, ok = s.countedSlots(r, lvCluster, d)
	if !ok {
		return 0, 0, 0, 0, false
	}
	return dom.hi - dom.lo, x.down[lvCluster][d], slots, s.dfree[lvCluster][d], true
}

// indexed reports whether best fit at level l for r can walk the buckets.
func (s *Snapshot) indexed(r *request, l int) bool {
	x := &s.dindex
	return x.stride > 0 && l > lvNode && x.own[l] != lvNode && r.mig == "" && r.fit != nil && !r.firstFit &&
		r.within < 0 && r.policy != Spread && r.gpm <= x.stride
}

// bestDomainIndexed is bestDomain for BinPack over the whole fleet: the
// domain of level l with the fewest free GPUs on nodes where a member fits
// among those holding every member, lowest index first among equals. It
// walks the buckets from r.need members up and stops once a bucket's
// members alone need more GPUs than the best found (a domain holding k
// members of g GPUs has at least k·g of them free on such nodes). Domains
// the sums do not answer for (clusters the filters split, held nodes) are
// counted node by node, as bestDomain does.
func (s *Snapshot) bestDomainIndexed(r *request, l int) (int, bool) {
	x := &s.dindex
	own := x.own[l]
	best, bestFree := int32(-1), int32(0)
	consider := func(d, slots, free int32) {
		if slots >= r.need && (best < 0 || free < bestFree || (free == bestFree && d < best)) {
			best, bestFree = d, free
		}
	}
	for c := range s.clusters {
		if r.fit[c] != fitMixed {
			continue
		}
		rg := s.clusters[c].ranges[l]
		for d := rg[0]; d < rg[1]; d++ {
			if s.dfree[l][d] >= r.need*r.gpm {
				k, f := s.domainSlots(r, l, int(d), r.need)
				consider(d, k, f)
			}
		}
	}
	for _, d := range x.heldDoms[own] {
		if x.held[own][d] > 0 && r.fit[s.levels[l][d].cluster] == fitAll {
			k, f := s.domainSlots(r, l, int(d), r.need)
			consider(d, k, f)
		}
	}
	g := r.gpm
	b := x.buckets[own]
	heads := b.head[g-1]
	for k, top := r.need, b.topOf(g); k <= top; k++ {
		if best >= 0 && g*k > bestFree {
			break
		}
		for d := heads[k]; d >= 0; d = b.next[(g-1)*b.n+d] {
			if r.fit[s.levels[l][d].cluster] != fitAll || x.held[own][d] > 0 {
				continue
			}
			consider(d, k, x.all.efree[own][d*x.stride+g-1])
		}
	}
	return int(best), best >= 0
}
