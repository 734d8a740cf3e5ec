// SPDX-License-Identifier: Apache-2.0

package placement

import "sort"

// place finds a placement for r without booking it; ok is false when the
// gang does not fit now.
func (s *Snapshot) place(r *request) (picks []pick, level, dom int, ok bool) {
	if len(r.roles) > 0 {
		return s.placeRoles(r)
	}
	s.scratch.picked = s.scratch.picked[:0]
	top := min(r.ceil, lvCluster)
	for l := lvNode; l <= top; l++ {
		if (r.firstFit || !r.topology || r.policy == Spread) && l < top {
			continue // Spread and the baselines look at the ceiling level only
		}
		if l > lvNode && s.trivial[l] && l < top {
			continue
		}
		if d, found := s.bestDomain(r, l, -1); found {
			s.fill(r, l, d, r.need)
			return s.scratch.picked, l, d, true
		}
	}
	if r.ceil == lvFleet && s.placeMulti(r) {
		return s.scratch.picked, lvFleet, -1, true
	}
	return nil, 0, 0, false
}

// bestDomain returns the domain at level l where r fits, by policy: the
// fullest that fits for BinPack, the emptiest for Spread, the first for
// first fit. With onlyCluster ≥ 0 it looks in that cluster alone.
func (s *Snapshot) bestDomain(r *request, l int, onlyCluster int) (int, bool) {
	want := r.need * r.gpm
	if r.mig == "" && want > s.maxGPUs[l] {
		return -1, false
	}
	if l == lvNode && r.mig == "" && !r.firstFit && r.within < 0 {
		return s.bestNode(r, onlyCluster)
	}
	if onlyCluster < 0 && s.indexed(r, l) {
		return s.bestDomainIndexed(r, l)
	}
	best, bestFree := -1, int32(0)
	for c := range s.clusters {
		if !r.clusterOK[c] || (onlyCluster >= 0 && c != onlyCluster) {
			continue
		}
		cr := s.clusters[c].ranges[lvCluster]
		if cr[0] == cr[1] || (r.mig == "" && s.dfree[lvCluster][cr[0]] < want) {
			continue
		}
		if k, _, ok := s.countedSlots(r, lvCluster, cr[0]); ok && k < r.need {
			continue // no domain of the cluster holds more than the cluster
		}
		rg := s.domainRange(r, c, l)
		free := s.dfree[l]
		for d := rg[0]; d < rg[1]; d++ {
			if r.mig == "" && free[d] < want {
				continue
			}
			slots, free := s.domainSlots(r, l, int(d), r.need)
			if slots < r.need {
				continue
			}
			if r.firstFit {
				return int(d), true
			}
			if r.shared && l == lvNode && r.policy != Spread {
				if best < 0 || s.sharesFirst(r, d, int32(best), free, bestFree) {
					best, bestFree = int(d), free
				}
				continue
			}
			if best < 0 || (r.policy == Spread && free > bestFree) || (r.policy != Spread && free < bestFree) {
				best, bestFree = int(d), free
			}
		}
	}
	return best, best >= 0
}

// domainSlots returns the members of r that fit in a domain and the free
// GPUs (or slices) of its eligible nodes. With stopAt > 0 it may stop
// counting early once slots reach stopAt for first fit.
func (s *Snapshot) domainSlots(r *request, l, d int, stopAt int32) (slots, free int32) {
	if k, f, ok := s.countedSlots(r, l, int32(d)); ok {
		return k, f
	}
	dom := &s.levels[l][d]
	for i := dom.lo; i < dom.hi; i++ {
		k := s.slots(r, i)
		if k == 0 {
			continue
		}
		slots += k
		if r.mig == "" {
			free += s.nodes[i].free
		} else {
			free += s.slice(i, r.mig).free()
		}
		if r.firstFit && stopAt > 0 && slots >= stopAt {
			return slots, free
		}
	}
	return slots, free
}

// fill picks need members inside domain d of level l, appending to the
// scratch picks, and returns how many it placed.
func (s *Snapshot) fill(r *request, l, d int, need int32) int32 {
	if l == lvNode {
		k := min(need, s.slots(r, int32(d)))
		if k > 0 {
			s.scratch.picked = append(s.scratch.picked, pick{node: int32(d), members: k})
		}
		return k
	}
	dom := &s.levels[l][d]
	n := int(dom.chi - dom.clo)
	slots := int32s(&s.scratch.slots[l], n)
	free := int32s(&s.scratch.free[l], n)
	for c := range n {
		slots[c], free[c] = s.domainSlots(r, l-1, int(dom.clo)+c, 0)
	}
	switch {
	case r.firstFit || !r.topology:
		return s.fillInOrder(r, l, dom.clo, slots, need)
	case r.policy == Spread:
		return s.fillSpread(r, l, dom.clo, slots, need)
	}
	return s.fillPack(r, l, dom.clo, slots, free, need)
}

// fillPack puts the rest into the fullest child that holds it whole, or
// else fills the child with the most room and goes on: fewest children,
// big children kept whole.
func (s *Snapshot) fillPack(r *request, l int, clo int32, slots, free []int32, need int32) int32 {
	placed := int32(0)
	for need > 0 {
		fit, big := -1, -1
		for c, k := range slots {
			if k >= need && (fit < 0 || free[c] < free[fit]) {
				fit = c
			}
			if k > 0 && (big < 0 || k > slots[big]) {
				big = c
			}
		}
		c := fit
		if c < 0 {
			c = big
		}
		if c < 0 {
			break
		}
		take := min(need, slots[c])
		slots[c] = 0
		got := s.fill(r, l-1, int(clo)+c, take)
		placed += got
		need -= got
	}
	return placed
}

// fillSpread deals members one at a time to the children, those with the
// most room first.
func (s *Snapshot) fillSpread(r *request, l int, clo int32, slots []int32, need int32) int32 {
	order := make([]int, len(slots))
	for c := range order {
		order[c] = c
	}
	sort.SliceStable(order, func(a, b int) bool { return slots[order[a]] > slots[order[b]] })
	counts := make([]int32, len(slots))
	for need > 0 {
		progress := false
		for _, c := range order {
			if need > 0 && slots[c] > counts[c] {
				counts[c]++
				need--
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	placed := int32(0)
	for c, k := range counts {
		if k > 0 {
			placed += s.fill(r, l-1, int(clo)+c, k)
		}
	}
	return placed
}

// fillInOrder takes children in order, as a topology-blind first fit would.
func (s *Snapshot) fillInOrder(r *request, l int, clo int32, slots []int32, need int32) int32 {
	placed := int32(0)
	for c, k := range slots {
		if need == 0 {
			break
		}
		if k == 0 {
			continue
		}
		got := s.fill(r, l-1, int(clo)+c, min(need, k))
		placed += got
		need -= got
	}
	return placed
}

// domainRange returns the domains of level l in cluster c that a request
// may use: all of them, or those inside (or around) its within domain.
func (s *Snapshot) domainRange(r *request, c, l int) [2]int32 {
	if r.within < 0 {
		return s.clusters[c].ranges[l]
	}
	w := &s.levels[r.within][r.withinDom]
	if int(w.cluster) != c {
		return [2]int32{}
	}
	if l >= r.within {
		d := s.nodes[w.lo].dom[l]
		return [2]int32{d, d + 1}
	}
	return [2]int32{s.nodes[w.lo].dom[l], s.nodes[w.hi-1].dom[l] + 1}
}

// sharesFirst reports whether node i, with free shares, packs a shared-GPU
// member better than node j with jFree: the node with the most shares in
// use first (a GPU already shared), then the fewest free (best fit), so
// that shared nodes left untouched stay whole.
func (s *Snapshot) sharesFirst(r *request, i, j, free, jFree int32) bool {
	ui, uj := s.slice(i, r.mig).used, s.slice(j, r.mig).used
	if ui != uj {
		return ui > uj
	}
	return free < jFree
}
