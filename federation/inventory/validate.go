// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"maps"
	"slices"
)

// Validate checks what the scheduler relies on in a reported inventory:
// node names present and unique, and counts that are not negative, with
// used counts within the node's (a larger used count is an over-commit the
// agent saw, which it reports as it is). The first problem is returned
// with the node's name and the field, so an agent's bug is refused at
// report instead of booking GPUs that do not exist.
func (c *Cluster) Validate() error {
	seen := make(map[string]bool, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		at := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			return fmt.Errorf("%s.name: required", at)
		}
		at = fmt.Sprintf("nodes[%d] (%s)", i, n.Name)
		if seen[n.Name] {
			return fmt.Errorf("%s.name: duplicate node", at)
		}
		seen[n.Name] = true
		for _, f := range []struct {
			name string
			v    int64
		}{{"gpus", int64(n.GPUs)}, {"capacityGPUs", int64(n.CapacityGPUs)}, {"usedGPUs", int64(n.UsedGPUs)}, {"draGPUs", int64(n.DRAGPUs)}, {"memoryMiB", n.MemoryMiB}} {
			if f.v < 0 {
				return fmt.Errorf("%s.%s: %d must not be negative", at, f.name, f.v)
			}
		}
		if n.CapacityGPUs > 0 && n.GPUs > n.CapacityGPUs {
			return fmt.Errorf("%s.gpus: %d allocatable exceeds the capacity %d", at, n.GPUs, n.CapacityGPUs)
		}
		for _, r := range slices.Sorted(maps.Keys(n.MIG)) {
			m := n.MIG[r]
			if m.Allocatable < 0 || m.Used < 0 {
				return fmt.Errorf("%s.mig[%s]: counts must not be negative (allocatable %d, used %d)", at, r, m.Allocatable, m.Used)
			}
		}
		if sh := n.Shared; sh != nil && (sh.Allocatable < 0 || sh.Used < 0 || sh.Replicas < 1 || sh.GPUs < 0) {
			return fmt.Errorf("%s.shared: counts must not be negative and replicas at least 1 (allocatable %d, used %d, replicas %d, gpus %d)",
				at, sh.Allocatable, sh.Used, sh.Replicas, sh.GPUs)
		}
	}
	return nil
}
