// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"strings"
	"unique"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// classMemo is what a pending gang's class is made of that does not
// change from cycle to cycle: the fields decide reads to key its quota
// answer (admitKey) and its wait class (waitKey, but for the reservations
// it may use, which are the cycle's), and those two keys interned. A cycle
// with 35,000 waiting gangs spent a fifth of its CPU hashing the keys'
// strings (queue, products, slice resource, required level) into its memo
// maps (BenchmarkCycleFXLPlaced); a gang keeps its class as a handle
// (Gang.class, made by the first cycle that decides it) and later cycles
// compare the gang's fields with it, which costs less than hashing them,
// and key their maps by the interned keys' handles. A gang whose fields
// changed since gets a new one. Interned, the classes of many gangs share
// one value and cost nothing once no gang holds them.
type classMemo struct {
	queue, mig, strategy string
	shared               bool
	nProducts            int    // -1: Products is nil
	products             string // Products joined by NUL
	members, gpm         int
	maxClusters          int
	required             inventory.Level
	policy               Policy
	classed              bool // filterKey holds: decided by class
	admit                unique.Handle[admitKey]
	wait                 unique.Handle[waitKey] // mayUse 0; set when classed
}

// classOf returns g's class, made and kept in g when g has none or its
// fields changed; false for a gang with roles, which has none (decided
// in full, as before).
func classOf(g *Gang) (classMemo, bool) {
	if len(g.Roles) > 0 {
		return classMemo{}, false
	}
	if g.class != (unique.Handle[classMemo]{}) {
		if m := g.class.Value(); m.matches(g) {
			return m, true
		}
	}
	m := classMemo{queue: g.Queue, mig: g.MIGResource, shared: g.Shared != nil, nProducts: productCount(g),
		products: strings.Join(g.Products, "\x00"), members: g.Members, gpm: g.GPUsPerMember,
		maxClusters: g.MaxClusters, required: g.Topology.Required, policy: g.Policy, classed: classable(g)}
	if g.Shared != nil {
		m.strategy = g.Shared.Strategy
	}
	m.admit = unique.Make(admitKey{g.Queue, usesKeyOf(g), g.GPUs()})
	if m.classed {
		f, _ := filterKey(g)
		m.wait = unique.Make(waitKey{filterKeyT: f, gpm: int32(g.GPUsPerMember), need: int32(g.Members),
			mig: g.sliceResource(), required: g.Topology.Required, maxClusters: g.MaxClusters, policy: g.Policy})
	}
	g.class = unique.Make(m)
	return m, true
}

// matches says whether g (without roles) still has the fields m was made
// from.
func (m *classMemo) matches(g *Gang) bool {
	return g.Queue == m.queue && g.MIGResource == m.mig && (g.Shared != nil) == m.shared &&
		(g.Shared == nil || g.Shared.Strategy == m.strategy) && g.Members == m.members &&
		g.GPUsPerMember == m.gpm && g.MaxClusters == m.maxClusters && g.Topology.Required == m.required &&
		g.Policy == m.policy && productCount(g) == m.nProducts && joinedIs(g.Products, m.products) &&
		classable(g) == m.classed
}

// productCount is len(g.Products), -1 when nil.
func productCount(g *Gang) int {
	if g.Products == nil {
		return -1
	}
	return len(g.Products)
}

// classable says whether filterKey holds for a gang without roles.
func classable(g *Gang) bool {
	return g.Devices == nil && g.ClusterSelector == nil && len(g.Clusters) == 0 && len(g.Pools) == 0 &&
		len(g.Tolerations) == 0 && !g.ComputeDomain
}

// joinedIs says whether parts joined by NUL are joined, without joining
// them.
func joinedIs(parts []string, joined string) bool {
	switch len(parts) {
	case 0:
		return joined == ""
	case 1:
		return parts[0] == joined
	}
	rest := joined
	for i, p := range parts {
		if !strings.HasPrefix(rest, p) {
			return false
		}
		rest = rest[len(p):]
		if i < len(parts)-1 {
			if !strings.HasPrefix(rest, "\x00") {
				return false
			}
			rest = rest[1:]
		}
	}
	return rest == ""
}

// idFilter is a first test of membership in a small set of gang IDs (the
// gangs holding a reservation, a handful): an ID it refuses is not in the
// set, one it passes may be and is looked up. It keeps the cycle from
// hashing every pending gang's ID into the set's map, a tenth of a cycle
// with 35,000 waiting gangs (BenchmarkCycleFXLPlaced). IDs are told apart
// by their length and last three bytes (job names end in counters).
type idFilter struct{ bits [4]uint64 }

func idBit(id string) uint {
	n := len(id)
	h := uint(n)
	for i := max(0, n-3); i < n; i++ {
		h = h*31 + uint(id[i])
	}
	return h & 255
}

func (f *idFilter) add(id string) {
	b := idBit(id)
	f.bits[b>>6] |= 1 << (b & 63)
}

func (f *idFilter) mayHold(id string) bool {
	b := idBit(id)
	return f.bits[b>>6]&(1<<(b&63)) != 0
}
