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
	filters      filterKeyT // products and sharing (filterKeyOf)
	queue, mig   string
	members, gpm int
	maxClusters  int
	required     inventory.Level
	policy       Policy
	classed      bool // filterKey holds: decided by class
	admit        unique.Handle[admitKey]
	wait         unique.Handle[waitKey] // mayUse 0; set when classed
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
	m := classMemo{filters: filterKeyOf(g), queue: g.Queue, mig: g.MIGResource, members: g.Members,
		gpm: g.GPUsPerMember, maxClusters: g.MaxClusters, required: g.Topology.Required, policy: g.Policy,
		classed: classable(g)}
	m.admit = unique.Make(admitKey{g.Queue, usesKeyOf(g), g.GPUs()})
	if m.classed {
		m.wait = unique.Make(waitKey{filterKeyT: m.filters, gpm: int32(g.GPUsPerMember), need: int32(g.Members),
			mig: g.sliceResource(), required: g.Topology.Required, maxClusters: g.MaxClusters, policy: g.Policy})
	}
	g.class = unique.Make(m)
	return m, true
}

// matches says whether g (without roles) still has the fields m was made
// from.
func (m *classMemo) matches(g *Gang) bool {
	return g.Queue == m.queue && g.MIGResource == m.mig && g.Members == m.members &&
		g.GPUsPerMember == m.gpm && g.MaxClusters == m.maxClusters && g.Topology.Required == m.required &&
		g.Policy == m.policy && sameFilterKey(g, &m.filters) && classable(g) == m.classed
}

// classable says whether g has no filters but products and sharing
// (filterKey holds for it, roles apart).
func classable(g *Gang) bool {
	return g.Devices == nil && g.ClusterSelector == nil && len(g.Clusters) == 0 && len(g.Pools) == 0 &&
		len(g.Tolerations) == 0 && !g.ComputeDomain
}

// joinedIs says whether parts joined by NUL are joined, without joining
// more than one.
func joinedIs(parts []string, joined string) bool {
	if len(parts) <= 1 {
		return strings.Join(parts, "\x00") == joined // no copy of none or one
	}
	rest := joined
	var ok bool
	for i, p := range parts {
		if i > 0 {
			if rest, ok = strings.CutPrefix(rest, "\x00"); !ok {
				return false
			}
		}
		if rest, ok = strings.CutPrefix(rest, p); !ok {
			return false
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
