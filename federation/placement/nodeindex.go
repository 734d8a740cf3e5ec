// SPDX-License-Identifier: Apache-2.0

package placement

// nodeIndex buckets each cluster's nodes by free GPUs, so that the best
// single-node fit is found without scanning the fleet: the fullest node
// that fits is the first eligible node of the lowest bucket ≥ the need.
type freeIndex struct {
	head       [][]int32 // [cluster][free] → first node, -1 when empty
	next, prev []int32
}

// buildFreeIndex indexes the nodes by free GPUs, in spare's arrays when
// they fit (a dead snapshot's index).
func (s *Snapshot) buildFreeIndex(spare *freeIndex) {
	x := &s.index
	if spare != nil && len(spare.head) == len(s.clusters) && len(spare.next) == len(s.nodes) &&
		(len(spare.head) == 0 || len(spare.head[0]) == int(s.maxNode)+1) {
		*x = *spare
	} else {
		x.head = make([][]int32, len(s.clusters))
		for c := range x.head {
			x.head[c] = make([]int32, s.maxNode+1)
		}
		x.next = make([]int32, len(s.nodes))
		x.prev = make([]int32, len(s.nodes))
	}
	for c := range x.head {
		for v := range x.head[c] {
			x.head[c][v] = -1
		}
	}
	for i := len(s.nodes) - 1; i >= 0; i-- {
		x.push(s.nodes[i].cluster, s.nodes[i].free, int32(i))
	}
}

func (x *freeIndex) push(c, free, i int32) {
	h := x.head[c][free]
	x.prev[i], x.next[i] = -1, h
	if h >= 0 {
		x.prev[h] = i
	}
	x.head[c][free] = i
}

func (x *freeIndex) remove(c, free, i int32) {
	if p := x.prev[i]; p >= 0 {
		x.next[p] = x.next[i]
	} else {
		x.head[c][free] = x.next[i]
	}
	if n := x.next[i]; n >= 0 {
		x.prev[n] = x.prev[i]
	}
}

// move re-buckets node i after its free count changed.
func (x *freeIndex) move(c, from, to, i int32) {
	if x.head == nil {
		return
	}
	x.remove(c, from, i)
	x.push(c, to, i)
}

// bestNode returns the node where all of r fits: the fullest (BinPack) or
// emptiest (Spread) eligible node, over r's clusters.
func (s *Snapshot) bestNode(r *request, onlyCluster int) (int, bool) {
	want := r.need * r.gpm
	if want > s.maxNode {
		return -1, false
	}
	best, bestFree := int32(-1), int32(0)
	for c := range s.clusters {
		if !r.clusterOK[c] || (onlyCluster >= 0 && c != onlyCluster) {
			continue
		}
		heads := s.index.head[c]
		for k := range int32(len(heads)) - want {
			v := want + k
			if r.policy == Spread {
				v = int32(len(heads)) - 1 - k
			}
			if best >= 0 && ((r.policy == Spread && v <= bestFree) || (r.policy != Spread && v >= bestFree)) {
				break
			}
			if i := s.firstEligible(r, heads[v]); i >= 0 {
				best, bestFree = i, v
				break
			}
		}
	}
	return int(best), best >= 0
}

func (s *Snapshot) firstEligible(r *request, i int32) int32 {
	for ; i >= 0; i = s.index.next[i] {
		if s.slots(r, i) >= r.need {
			return i
		}
	}
	return -1
}
