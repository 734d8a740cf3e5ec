// SPDX-License-Identifier: Apache-2.0

package placement

import "sort"

// placeMulti spreads r over the fewest clusters (at most maxClusters): the
// clusters with the most room first, the remainder in the fullest cluster
// that holds it, placed at the tightest level there.
func (s *Snapshot) placeMulti(r *request) bool {
	type cs struct {
		c     int
		slots int32
		free  int32
	}
	var cands []cs
	var total int32
	for c := range s.clusters {
		cr := s.clusters[c].ranges[lvCluster]
		if !r.clusterOK[c] || cr[0] == cr[1] {
			continue
		}
		k, f := s.domainSlots(r, lvCluster, int(cr[0]), 0)
		if k > 0 {
			cands = append(cands, cs{c, k, f})
			total += k
		}
	}
	if total < r.need {
		return false
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].slots != cands[j].slots {
			return cands[i].slots > cands[j].slots
		}
		return cands[i].c < cands[j].c
	})
	// Largest first gives the fewest clusters; find how many.
	used, sum := 0, int32(0)
	for used < len(cands) && sum < r.need {
		sum += cands[used].slots
		used++
	}
	if used > r.maxClusters {
		return false
	}
	need := r.need
	for i := 0; i < used-1; i++ {
		s.fill(r, lvCluster, int(s.clusters[cands[i].c].ranges[lvCluster][0]), cands[i].slots)
		need -= cands[i].slots
	}
	// The remainder goes to the fullest unused cluster that holds it.
	last := used - 1
	for i := used - 1; i < len(cands); i++ {
		if cands[i].slots >= need && cands[i].free < cands[last].free {
			last = i
		}
	}
	sub := *r
	sub.need = need
	top := lvCluster
	for l := lvNode; l <= top; l++ {
		if l > lvNode && s.trivial[l] && l < top {
			continue
		}
		if (sub.firstFit || !sub.topology || sub.policy == Spread) && l < top {
			continue
		}
		if d, ok := s.bestDomain(&sub, l, cands[last].c); ok {
			s.fill(&sub, l, d, need)
			return true
		}
	}
	return false
}
