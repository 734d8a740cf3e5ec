// SPDX-License-Identifier: Apache-2.0

package placement

import "strconv"

// Compute domains (docs/compute-domains.md): a gang with
// Gang.ComputeDomain gets one NVIDIA ComputeDomain per NVLink clique it
// uses, and two domains never share a clique. Nodes of a clique in a
// cluster that serves ComputeDomains form node classes of their own
// (class.clique), so the rule is a class filter: a compute-domain gang
// takes only classes with a clique that no other compute-domain gang's
// allocation holds. Allocations assumed earlier in the same cycle count,
// since Assume adds them before the next gang is placed. Gangs without a
// compute domain are not filtered: they may use free nodes of any clique.

// cliqueKey names a clique of one cluster of the snapshot.
func cliqueKey(cluster int32, clique string) string {
	return strconv.Itoa(int(cluster)) + "/" + clique
}

// holdCliques counts (sign 1) or uncounts (-1) the cliques the nodes of a
// compute-domain gang's allocation lie in.
func (s *Snapshot) holdCliques(al *allocation, sign int) {
	seen := map[string]bool{}
	for _, cg := range al.byClass {
		c := &s.classes[cg.class]
		if c.clique == "" {
			continue
		}
		k := cliqueKey(c.cluster, c.clique)
		if seen[k] {
			continue
		}
		seen[k] = true
		if s.cdHeld[k] += sign; s.cdHeld[k] <= 0 {
			delete(s.cdHeld, k)
		}
	}
}

// cliqueFree reports whether a compute-domain gang may use nodes of class
// c: they lie in a clique of a cluster serving ComputeDomains that no
// compute-domain gang holds.
func (s *Snapshot) cliqueFree(c *class) bool {
	return c.clique != "" && s.cdHeld[cliqueKey(c.cluster, c.clique)] == 0
}
