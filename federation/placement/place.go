// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"cmp"
	"slices"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// params are the knobs of one placement; baselines turn parts off.
type params struct {
	ignoreTopology bool
	firstFit       bool
}

// PlaceOption changes how Place decides.
type PlaceOption func(*params)

// IgnoreTopology places with no regard to topology: any nodes of one
// cluster (or several), required levels ignored. It exists for baselines.
func IgnoreTopology() PlaceOption { return func(p *params) { p.ignoreTopology = true } }

// FirstFit takes the first domain and nodes that fit in snapshot order
// instead of the best fit. It exists for baselines.
func FirstFit() PlaceOption { return func(p *params) { p.firstFit = true } }

// Place finds where gang g fits now, without booking it. The error is an
// *Unschedulable explaining why when it does not fit, or wraps
// ErrInvalidGang.
func (s *Snapshot) Place(g Gang, opts ...PlaceOption) (Placement, error) {
	var p params
	for _, o := range opts {
		o(&p)
	}
	return s.placeWith(&g, p, -1)
}

func (s *Snapshot) placeWith(g *Gang, p params, holder int32) (Placement, error) {
	if err := validate(g); err != nil {
		return Placement{}, err
	}
	r := s.newRequest(g, p)
	r.holder = holder
	picks, level, dom, ok := s.place(r)
	if !ok {
		return Placement{}, s.why(r)
	}
	return s.placement(g, picks, level, dom, len(r.roles) > 0), nil
}

// why explains a request that did not fit.
func (s *Snapshot) why(r *request) *Unschedulable {
	if len(r.roles) > 0 {
		return s.explainRoles(r)
	}
	return s.explain(r)
}

// placement turns picks into a Placement sorted by node order. The picks
// of a heterogeneous gang have their roles in s.scratch.roles. For other
// gangs it leaves the node of each assignment in s.scratch.assigned.
func (s *Snapshot) placement(g *Gang, picks []pick, level, dom int, hetero bool) Placement {
	if hetero {
		return s.rolePlacement(g, picks, level, dom)
	}
	sorted := append([]pick(nil), picks...)
	slices.SortFunc(sorted, func(a, b pick) int { return cmp.Compare(a.node, b.node) })
	p := Placement{Gang: g.ID, Ref: g.Ref, Assignments: make([]Assignment, 0, len(sorted))}
	s.scratch.assigned = s.scratch.assigned[:0]
	last := int32(-1)
	for _, pk := range sorted {
		n := &s.nodes[pk.node]
		c := s.clusters[n.cluster].name
		if k := len(p.Assignments); k > 0 && p.Assignments[k-1].Node == s.nodeNames[pk.node] && p.Assignments[k-1].Cluster == c {
			p.Assignments[k-1].Members += int(pk.members)
			continue
		}
		p.Assignments = append(p.Assignments, Assignment{Cluster: c, Node: s.nodeNames[pk.node], Members: int(pk.members)})
		s.scratch.assigned = append(s.scratch.assigned, pk.node)
		if n.cluster != last {
			p.Clusters = append(p.Clusters, c)
			last = n.cluster
		}
	}
	if len(g.Roles) > 0 {
		p.Assignments = roleAssignments(g, p.Assignments, false)
	}
	if level < numLevels {
		p.Level, p.Domain = s.tightest(sorted, level, dom)
	}
	return p
}

// tightest returns the tightest level whose one domain holds every pick:
// a rack-level choice that landed in one NVLink domain reports nvlink.
func (s *Snapshot) tightest(picks []pick, level, dom int) (inventory.Level, string) {
	for l := lvNode; l < level; l++ {
		d := s.nodes[picks[0].node].dom[l]
		same := true
		for _, pk := range picks[1:] {
			if s.nodes[pk.node].dom[l] != d {
				same = false
				break
			}
		}
		if same {
			return levelNames[l], s.levels[l][d].name
		}
	}
	return levelNames[level], s.levels[level][dom].name
}
