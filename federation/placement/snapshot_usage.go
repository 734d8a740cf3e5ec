// SPDX-License-Identifier: Apache-2.0

package placement

// NodeUsage returns a node's whole GPUs (allocatable) and those in use as
// the snapshot sees them: the inventory's usage plus the GPUs of the
// allocations not yet counted in it (placements booked this cycle
// included). ok is false for a node the snapshot does not know.
func (s *Snapshot) NodeUsage(cluster, name string) (gpus, used int, ok bool) {
	i, ok := s.nodeAt(cluster, name)
	if !ok {
		return 0, 0, false
	}
	n := &s.nodes[i]
	return int(n.gpus), int(n.used), true
}

// InventoryNodeUsage is NodeUsage of the k-th node of the ci-th cluster of
// the inventories the snapshot was built from, in name order, found
// without a name lookup; ok is false when there is no such node or the
// cluster there is not the one named.
func (s *Snapshot) InventoryNodeUsage(ci, k int, cluster string) (gpus, used int, ok bool) {
	if ci < 0 || ci >= len(s.pos) || k < 0 || k >= len(s.pos[ci]) || s.clusters[ci].name != cluster {
		return 0, 0, false
	}
	n := &s.nodes[s.pos[ci][k]]
	return int(n.gpus), int(n.used), true
}
