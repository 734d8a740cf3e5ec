// SPDX-License-Identifier: Apache-2.0

package placement

// scratch holds buffers reused across decisions so a decision does not
// allocate per node or per domain.
type scratch struct {
	clusterOK, classOK, seen []bool
	fit                      []int8
	slots, free              [numLevels][]int32
	pot                      []int32 // rankDomains: candidates' GPUs by domain
	picked                   []pick
	assigned                 []int32 // placement: the node of each assignment (no roles)
	// roles[k] is the index in Gang.Roles of picked[k] after a
	// heterogeneous gang's placement (roles.go); unused otherwise.
	roles []int32
	// order is a cycle's pending gangs in order (sortPending); pend the
	// array its queues' pending lists are carved from and leaves those
	// queues (cycle.queueBand). A Builder's next snapshot keeps them.
	order, pend []*Gang
	leaves      []*qnode
	leafOf      []*qnode // queueBand's queue of each gang of the band
	// refs points into Input.Pending when the caller gave no PendingRefs.
	refs []*Gang
}

// pick is a tentative assignment: members on a node.
type pick struct{ node, members int32 }

func (sc *scratch) bools(buf *[]bool, n int) []bool {
	if cap(*buf) < n {
		*buf = make([]bool, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

func int32s(buf *[]int32, n int) []int32 {
	if cap(*buf) < n {
		*buf = make([]int32, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}
