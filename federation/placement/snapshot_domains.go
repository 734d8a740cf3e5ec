// SPDX-License-Identifier: Apache-2.0

package placement

// buildDomains groups the sorted nodes into nested domains at every level.
func (s *Snapshot) buildDomains(key func(i, l int) string) {
	for l := lvNode; l < numLevels; l++ {
		var doms []domain
		for i := range s.nodes {
			n := &s.nodes[i]
			if i == 0 || l == lvNode || n.cluster != s.nodes[i-1].cluster || !sameKeys(key, i, l) {
				doms = append(doms, domain{name: s.domainName(int32(i), l, key(i, min(l, lvBlock))),
					cluster: n.cluster, lo: int32(i)})
			}
			d := &doms[len(doms)-1]
			d.hi = int32(i + 1)
			d.gpus += n.gpus
			n.dom[l] = int32(len(doms) - 1)
		}
		s.levels[l] = doms
	}
	for l := lvNVLink; l < numLevels; l++ {
		for i := range s.levels[l] {
			d := &s.levels[l][i]
			d.clo = s.nodes[d.lo].dom[l-1]
			d.chi = s.nodes[d.hi-1].dom[l-1] + 1
		}
		s.trivial[l] = len(s.levels[l]) == len(s.levels[l-1])
	}
	for c := range s.clusters {
		for l := range numLevels {
			s.clusters[c].ranges[l] = [2]int32{-1, -1}
		}
	}
	for l := range numLevels {
		for i, d := range s.levels[l] {
			r := &s.clusters[d.cluster].ranges[l]
			if r[0] < 0 {
				r[0] = int32(i)
			}
			r[1] = int32(i + 1)
		}
	}
	for c := range s.clusters {
		for l := range numLevels {
			if s.clusters[c].ranges[l][0] < 0 {
				s.clusters[c].ranges[l] = [2]int32{}
			}
		}
	}
}

// sameKeys reports whether node i shares its domain keys at levels l..block with node i-1.
func sameKeys(key func(i, l int) string, i, l int) bool {
	for k := l; k <= lvBlock; k++ {
		if key(i, k) != key(i-1, k) {
			return false
		}
	}
	return true
}

func (s *Snapshot) domainName(i int32, l int, key string) string {
	c := s.clusters[s.nodes[i].cluster].name
	switch l {
	case lvCluster:
		return c
	case lvNode:
		return c + "/node:" + s.nodeNames[i]
	}
	return c + "/" + key
}

// setFree changes a node's free GPUs and every enclosing domain's count.
func (s *Snapshot) setFree(i int32, free int32) {
	s.version++
	n := &s.nodes[i]
	delta := free - n.free
	if delta == 0 {
		return
	}
	s.index.move(n.cluster, n.free, free, i)
	s.indexFree(i, n.free, free)
	n.free = free
	for l := range numLevels {
		s.dfree[l][n.dom[l]] += delta
	}
}
