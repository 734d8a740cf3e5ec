package placement

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
func (s *Snapshot) clearHolds() { s.holders = nil }

// freeOfHolds reports whether no other reservation holds a node of the domain.
func (s *Snapshot) freeOfHolds(l int, d int32, rid int32) bool {
	if s.holders == nil {
		return true
	}
	dom := &s.levels[l][d]
	for i := dom.lo; i < dom.hi; i++ {
		if h := s.holders[i]; h >= 0 && h != rid {
			return false
		}
	}
	return true
}

// hold marks a domain as held by a new reservation for gang.
func (c *cycle) hold(gang string, l int, d int32) int32 {
	rid := int32(len(c.res))
	c.res = append(c.res, resv{gang: gang, level: l, dom: d, live: true})
	c.resByGang[gang] = rid
	h := c.s.holdsFor()
	dom := &c.s.levels[l][d]
	for i := dom.lo; i < dom.hi; i++ {
		h[i] = rid
	}
	c.held += int(dom.gpus)
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
	dom := &c.s.levels[r.level][r.dom]
	for i := dom.lo; i < dom.hi; i++ {
		if c.s.holders[i] == rid {
			c.s.holders[i] = -1
		}
	}
	c.held -= int(dom.gpus)
}

// restoreReservations re-holds the previous cycle's reservations of gangs
// that still wait, so their domains keep draining towards them.
func (c *cycle) restoreReservations() {
	if len(c.in.Reservations) == 0 {
		return
	}
	pending := map[string]bool{}
	for i := range c.in.Pending {
		pending[c.in.Pending[i].ID] = true
	}
	for _, r := range c.in.Reservations {
		l, ok := levelIndex(r.Level)
		if !ok || !pending[r.Gang] {
			continue
		}
		d, found := c.s.domainByName(l, r.Domain)
		if !found || !c.s.freeOfHolds(l, d, -1) {
			continue
		}
		c.hold(r.Gang, l, d)
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

// reserve holds a domain for a big gang at the head of its queue: at the
// tightest level where some domain could hold it once empty, the domain
// closest to fitting now.
func (c *cycle) reserve(g *Gang, r *request) {
	need := r.need * r.gpm
	if live := c.liveReservations(); live >= c.cfg.maxReservations {
		return
	}
	minGPUs := int32(c.cfg.reservationMinGPUs)
	if minGPUs == 0 {
		minGPUs = c.s.maxNode
	}
	if need < minGPUs {
		return
	}
	top := min(r.ceil, lvCluster)
	for l := lvNode; l <= top; l++ {
		if (r.firstFit || !r.topology) && l < top {
			continue
		}
		best, bestFree := int32(-1), int32(-1)
		for ci := range c.s.clusters {
			if !r.clusterOK[ci] {
				continue
			}
			rg := c.s.clusters[ci].ranges[l]
			for d := rg[0]; d < rg[1]; d++ {
				dom := &c.s.levels[l][d]
				if dom.gpus < need || c.s.capacitySlots(r, l, d) < r.need || !c.s.freeOfHolds(l, d, -1) {
					continue
				}
				if c.held > 0 && float64(c.held+int(dom.gpus)) > c.cfg.maxHeldFraction*float64(c.total) {
					continue
				}
				if _, f := c.s.domainSlots(r, l, int(d), 0); f > bestFree {
					best, bestFree = d, f
				}
			}
		}
		if best >= 0 {
			c.hold(g.ID, l, best)
			return
		}
	}
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
	dom := &s.levels[l][d]
	var k int32
	for i := dom.lo; i < dom.hi; i++ {
		n := &s.nodes[i]
		if !r.classOK[n.class] || !n.schedulable {
			continue
		}
		if r.mig != "" {
			if m := n.mig[r.mig]; m != nil {
				k += m.alloc / r.gpm
			}
			continue
		}
		k += n.gpus / r.gpm
	}
	return k
}
