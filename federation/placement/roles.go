// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// A gang with roles is placed by its GPU roles; CPU-only roles (0 GPUs per
// member) take no GPUs and go, with no node, to the cluster of the gang's
// first GPU member, where the workload cluster's scheduler picks a node.
//
// When every GPU role asks for the same GPUs per member and tolerates the
// same taints, the GPU members are placed as one homogeneous gang (the
// request the engine always had) and dealt to the roles in member order.
// Otherwise the roles are placed one after another, largest members first,
// each booked before the next is placed: at each level from the tightest
// up, the domains are tried in policy order (the fullest first for
// BinPack, the emptiest for Spread) until one holds every role; a gang that
// may span clusters then tries the roles across the fleet, each as its own
// multi-cluster request, within maxClusters in all. Preemption and
// reservations size such a gang as its GPU members times the largest role's
// GPUs per member, an upper bound of what it needs.

// roleReq is one GPU role of a heterogeneous request.
type roleReq struct {
	idx int32 // index in Gang.Roles
	r   request
}

// setRoles fills the gang-wide request of a gang with roles: need is its
// GPU members, gpm the largest GPUs per member, and roles, for a gang whose
// GPU roles differ, one sub-request per GPU role, largest first.
func (s *Snapshot) setRoles(r *request) {
	g := r.g
	var need, gpm int32
	for i := range g.Roles {
		if ro := &g.Roles[i]; ro.GPUsPerMember > 0 {
			need += int32(ro.Members)
			gpm = max(gpm, int32(ro.GPUsPerMember))
		}
	}
	r.need, r.gpm = need, gpm
	if g.uniform() {
		return
	}
	for i := range g.Roles {
		ro := &g.Roles[i]
		if ro.GPUsPerMember <= 0 {
			continue
		}
		sub := roleReq{idx: int32(i), r: *r}
		sub.r.roles = nil
		sub.r.need, sub.r.gpm = int32(ro.Members), int32(ro.GPUsPerMember)
		sub.r.classOK = make([]bool, len(s.classes))
		for k := range s.classes {
			c := &s.classes[k]
			sub.r.classOK[k] = r.clusterOK[c.cluster] && productMatches(g.Products, c.product) && tolerates(ro.Tolerations, c.taints)
		}
		var fit []int8
		s.classFit(&sub.r, &fit)
		r.roles = append(r.roles, sub)
	}
	sort.SliceStable(r.roles, func(a, b int) bool { return r.roles[a].r.gpm > r.roles[b].r.gpm })
}

// uniform reports whether every GPU role of the gang asks for the same
// GPUs per member and tolerates the same taints (true without roles).
func (g *Gang) uniform() bool {
	var first *Role
	for i := range g.Roles {
		ro := &g.Roles[i]
		if ro.GPUsPerMember <= 0 {
			continue
		}
		if first == nil {
			first = ro
		} else if ro.GPUsPerMember != first.GPUsPerMember || !reflect.DeepEqual(ro.Tolerations, first.Tolerations) {
			return false
		}
	}
	return true
}

// pickGPM is the GPUs per member of the k-th pick of the gang's latest
// placement: the gang's, the common one of a uniform gang's GPU roles, or
// the pick's role's (s.scratch.roles).
func (s *Snapshot) pickGPM(g *Gang, k int) int {
	if len(g.Roles) == 0 {
		return g.GPUsPerMember
	}
	if !g.uniform() {
		return g.Roles[s.scratch.roles[k]].GPUsPerMember
	}
	for _, ro := range g.Roles {
		if ro.GPUsPerMember > 0 {
			return ro.GPUsPerMember
		}
	}
	return 0
}

// unitTolerations are the tolerations of the gang-wide request: the gang's,
// or those of the first GPU role with the most GPUs per member.
func (g *Gang) unitTolerations() []corev1.Toleration {
	if len(g.Roles) == 0 {
		return g.Tolerations
	}
	best := -1
	for i, ro := range g.Roles {
		if ro.GPUsPerMember > 0 && (best < 0 || ro.GPUsPerMember > g.Roles[best].GPUsPerMember) {
			best = i
		}
	}
	if best < 0 {
		return g.Tolerations
	}
	return g.Roles[best].Tolerations
}

// placeRoles places a heterogeneous request role by role (see above).
func (s *Snapshot) placeRoles(r *request) (picks []pick, level, dom int, ok bool) {
	if r.within >= 0 { // preemption asks about one domain
		if rps, ok := s.tryRoles(r, r.within, r.withinDom); ok {
			return s.setPicked(rps), r.within, int(r.withinDom), true
		}
		return nil, 0, 0, false
	}
	top := min(r.ceil, lvCluster)
	for l := lvNode; l <= top; l++ {
		if (r.firstFit || !r.topology || r.policy == Spread) && l < top {
			continue
		}
		if l > lvNode && s.trivial[l] && l < top {
			continue
		}
		for _, d := range s.roleDomains(r, l) {
			if rps, ok := s.tryRoles(r, l, d); ok {
				return s.setPicked(rps), l, int(d), true
			}
		}
	}
	if r.ceil == lvFleet {
		if rps, ok := s.tryRoles(r, lvFleet, -1); ok {
			if picks := s.setPicked(rps); s.clustersOf(picks) <= r.maxClusters {
				return picks, lvFleet, -1, true
			}
		}
	}
	return nil, 0, 0, false
}

// roleDomains lists the domains of level l that could hold every role of r
// by their free GPUs, in the order the policy tries them.
func (s *Snapshot) roleDomains(r *request, l int) []int32 {
	want := int32(0)
	for _, sub := range r.roles {
		want += sub.r.need * sub.r.gpm
	}
	var out []int32
	for c := range s.clusters {
		if !r.clusterOK[c] {
			continue
		}
		rg := s.clusters[c].ranges[l]
		for d := rg[0]; d < rg[1]; d++ {
			if r.mig == "" && s.dfree[l][d] < want {
				continue
			}
			out = append(out, d)
		}
	}
	if r.firstFit {
		return out
	}
	sort.SliceStable(out, func(a, b int) bool {
		fa, fb := s.dfree[l][out[a]], s.dfree[l][out[b]]
		if r.policy == Spread {
			return fa > fb
		}
		return fa < fb
	})
	return out
}

// tryRoles places every role of r inside domain d of level l (anywhere
// with l == lvFleet), booking each role's picks while the next is placed
// and unbooking them all before it returns.
func (s *Snapshot) tryRoles(r *request, l int, d int32) ([]rolePick, bool) {
	var all []rolePick
	defer func() {
		for _, rp := range all {
			s.use(rp.node, r.mig, -rp.members*rp.gpm)
		}
	}()
	for k := range r.roles {
		sub := r.roles[k].r
		sub.holder, sub.endsAt = r.holder, r.endsAt // set on r after setRoles copied it
		if l < lvFleet {
			sub.within, sub.withinDom, sub.ceil = l, d, l
		}
		picks, _, _, ok := s.place(&sub)
		if !ok {
			return nil, false
		}
		for _, pk := range picks {
			all = append(all, rolePick{pick: pk, role: r.roles[k].idx, gpm: sub.gpm})
			s.use(pk.node, r.mig, pk.members*sub.gpm)
		}
	}
	return append([]rolePick(nil), all...), true
}

// rolePick is a pick of a heterogeneous gang with its role.
type rolePick struct {
	pick
	role, gpm int32 // index in Gang.Roles, its GPUs per member
}

// setPicked makes role picks the scratch picks (and their roles).
func (s *Snapshot) setPicked(rps []rolePick) []pick {
	s.scratch.picked, s.scratch.roles = s.scratch.picked[:0], s.scratch.roles[:0]
	for _, rp := range rps {
		s.scratch.picked = append(s.scratch.picked, rp.pick)
		s.scratch.roles = append(s.scratch.roles, rp.role)
	}
	return s.scratch.picked
}

// rolePlacement is placement for a heterogeneous gang: assignments by node,
// then role, each carrying its role, then the CPU-only roles.
func (s *Snapshot) rolePlacement(g *Gang, picks []pick, level, dom int) Placement {
	rps := make([]rolePick, len(picks))
	for k, pk := range picks {
		rps[k] = rolePick{pick: pk, role: s.scratch.roles[k]}
	}
	slices.SortFunc(rps, func(a, b rolePick) int {
		if a.node != b.node {
			return cmp.Compare(a.node, b.node)
		}
		return cmp.Compare(a.role, b.role)
	})
	p := Placement{Gang: g.ID, Ref: g.Ref, Assignments: make([]Assignment, 0, len(rps))}
	sorted := make([]pick, len(rps))
	last := int32(-1)
	for k, rp := range rps {
		sorted[k] = rp.pick
		n := &s.nodes[rp.node]
		c, role := s.clusters[n.cluster].name, g.Roles[rp.role].Name
		if k := len(p.Assignments); k > 0 && p.Assignments[k-1].Node == s.nodeNames[rp.node] && p.Assignments[k-1].Cluster == c &&
			p.Assignments[k-1].Role == role {
			p.Assignments[k-1].Members += int(rp.members)
			continue
		}
		p.Assignments = append(p.Assignments, Assignment{Cluster: c, Node: s.nodeNames[rp.node], Members: int(rp.members), Role: role})
		if n.cluster != last {
			p.Clusters = append(p.Clusters, c)
			last = n.cluster
		}
	}
	p.Assignments = roleAssignments(g, p.Assignments, true)
	if level < numLevels {
		p.Level, p.Domain = s.tightest(sorted, level, dom)
	}
	return p
}

// clustersOf counts the distinct clusters of picks.
func (s *Snapshot) clustersOf(picks []pick) int {
	seen := map[int32]bool{}
	for _, pk := range picks {
		seen[s.nodes[pk.node].cluster] = true
	}
	return len(seen)
}

// roleAssignments turns the node-sorted assignments of a gang with roles
// into per-role ones: heterogeneous picks carry their role already; the
// members of a uniform gang are dealt to its GPU roles in member order.
// The CPU-only roles follow, each in the cluster of the first GPU member.
func roleAssignments(g *Gang, as []Assignment, hetero bool) []Assignment {
	var out []Assignment
	if hetero {
		out = as
	} else {
		k := 0
		left := 0
		if k < len(as) {
			left = as[0].Members
		}
		for _, ro := range g.Roles {
			if ro.GPUsPerMember <= 0 {
				continue
			}
			for need := ro.Members; need > 0 && k < len(as); {
				take := min(need, left)
				out = append(out, Assignment{Cluster: as[k].Cluster, Node: as[k].Node, Members: take, Role: ro.Name})
				need, left = need-take, left-take
				if left == 0 {
					k++
					if k < len(as) {
						left = as[k].Members
					}
				}
			}
		}
	}
	first := firstGPUCluster(g, out)
	for _, ro := range g.Roles {
		if ro.GPUsPerMember <= 0 {
			out = append(out, Assignment{Cluster: first, Members: ro.Members, Role: ro.Name})
		}
	}
	return out
}

// firstGPUCluster is the cluster of the gang's first GPU member: the first
// assignment of the first GPU role in spec order.
func firstGPUCluster(g *Gang, as []Assignment) string {
	for _, ro := range g.Roles {
		for _, a := range as {
			if a.Role == ro.Name && ro.GPUsPerMember > 0 {
				return a.Cluster
			}
		}
	}
	return ""
}

// explainRoles says why a heterogeneous request does not fit.
func (s *Snapshot) explainRoles(r *request) *Unschedulable {
	shape := r.g.Shape()
	_, free := s.GPUs()
	if r.mig == "" && free < r.g.GPUs() {
		return &Unschedulable{ReasonInsufficientGPUs, fmt.Sprintf("needs %s; %d GPUs are free", shape, free)}
	}
	where := "one " + string(levelNames[min(r.ceil, lvCluster)])
	if r.ceil == lvFleet {
		where = fmt.Sprintf("at most %d clusters", r.maxClusters)
	}
	return &Unschedulable{ReasonTopology, fmt.Sprintf("needs %s in %s; no such domain holds every role", shape, where)}
}

// validateRoles refuses a gang with roles that cannot be placed by
// construction: a role without members, negative GPUs, or no GPU role.
func validateRoles(g *Gang) error {
	gpu, total := false, 0
	names := map[string]bool{}
	for _, ro := range g.Roles {
		switch {
		case ro.Members <= 0:
			return fmt.Errorf("%w: role %q: members must be positive", ErrInvalidGang, ro.Name)
		case ro.GPUsPerMember < 0:
			return fmt.Errorf("%w: role %q: gpusPerMember must not be negative", ErrInvalidGang, ro.Name)
		case names[ro.Name]:
			return fmt.Errorf("%w: role %q twice", ErrInvalidGang, ro.Name)
		}
		names[ro.Name] = true
		gpu = gpu || ro.GPUsPerMember > 0
		total += ro.Members
	}
	if !gpu {
		return fmt.Errorf("%w: no role asks for GPUs", ErrInvalidGang)
	}
	if total != g.Members {
		return fmt.Errorf("%w: members (%d) is not the sum over the roles (%d)", ErrInvalidGang, g.Members, total)
	}
	return nil
}

// roleGPUsByProduct is gpusByProduct for a gang with roles.
func (s *Snapshot) roleGPUsByProduct(g *Gang, picks []pick) map[string]int {
	out := map[string]int{}
	for k, pk := range picks {
		c := &s.classes[s.nodes[pk.node].class]
		out[c.product] += int(pk.members) * s.pickGPM(g, k)
	}
	return out
}
