// SPDX-License-Identifier: Apache-2.0

package placement

// NodeUsage returns a node's whole GPUs (allocatable) and those in use as
// the snapshot sees them: the inventory's usage plus the GPUs of the
// allocations not yet counted in it (placements booked this cycle
// included). ok is false for a node the snapshot does not know.
func (s *Snapshot) NodeUsage(cluster, name string) (gpus, used int, ok bool) {
	i, ok := s.nodeIndex[cluster+"/"+name]
	if !ok {
		return 0, 0, false
	}
	n := &s.nodes[i]
	return int(n.gpus), int(n.used), true
}
