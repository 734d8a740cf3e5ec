// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// request is a gang prepared for one decision: filters resolved per class
// and cluster, level ceiling, policy.
type request struct {
	g           *Gang
	gpm, need   int32
	mig         string // the slice or share resource (Gang.sliceResource)
	shared      bool   // mig is nvidia.com/gpu.shared: pack onto shares in use first
	classOK     []bool
	clusterOK   []bool
	ceil        int // highest level index allowed (lvFleet: several clusters)
	maxClusters int
	policy      Policy
	topology    bool // false: ignore levels below the ceiling (baseline)
	firstFit    bool // fill nodes in order instead of best fit (baseline)
	holder      int32
	endsAt      int64     // UnixNano the gang ends by if started now (MaxInt64: unknown)
	within      int       // level of a domain the gang must stay in (-1: anywhere)
	withinDom   int32     // that domain
	roles       []roleReq // one per GPU role of a gang whose GPU roles differ (roles.go)
	fit         []int8    // per cluster: how classOK takes its nodes (domainindex.go)
}

// ErrInvalidGang is wrapped by errors about a gang that cannot be placed anywhere by construction.
var ErrInvalidGang = fmt.Errorf("invalid gang")

func validate(g *Gang) error {
	switch {
	case len(g.Roles) > 0:
		if err := validateRoles(g); err != nil {
			return err
		}
	case g.Members <= 0:
		return fmt.Errorf("%w: members must be positive", ErrInvalidGang)
	case g.GPUsPerMember <= 0:
		return fmt.Errorf("%w: gpusPerMember must be positive", ErrInvalidGang)
	}
	if g.Shared != nil && g.MIGResource != "" {
		return fmt.Errorf("%w: shared GPUs and MIG slices both asked for", ErrInvalidGang)
	}
	for _, l := range []inventory.Level{g.Topology.Required, g.Topology.Preferred} {
		if _, ok := levelIndex(l); l != "" && !ok {
			return fmt.Errorf("%w: unknown topology level %q", ErrInvalidGang, l)
		}
	}
	_, err := clusterSelector(g)
	return err
}

// newRequest resolves a gang's filters against the snapshot.
func (s *Snapshot) newRequest(g *Gang, p params) *request {
	r := s.requestOf(g, p)
	s.resolveFilters(r)
	return r
}

// requestOf prepares g's request without its filters (resolveFilters).
func (s *Snapshot) requestOf(g *Gang, p params) *request {
	r := &request{g: g, gpm: int32(g.GPUsPerMember), need: int32(g.Members), mig: g.sliceResource(), shared: g.Shared != nil,
		policy: g.Policy, topology: !p.ignoreTopology, firstFit: p.firstFit, holder: -1, within: -1, endsAt: math.MaxInt64,
		maxClusters: max(1, g.MaxClusters)}
	if r.policy == "" {
		r.policy = BinPack
	}
	r.ceil = lvCluster
	if r.maxClusters > 1 {
		r.ceil = lvFleet
	}
	if l, ok := levelIndex(g.Topology.Required); ok && r.topology {
		r.ceil = l
	}
	return r
}

// resolveFilters sets r's cluster and class filters and their fit per
// cluster, in the snapshot's scratch buffers, and a heterogeneous gang's
// roles.
func (s *Snapshot) resolveFilters(r *request) {
	g := r.g
	sel, err := clusterSelector(g)
	if err != nil {
		sel = labels.Nothing() // validate refuses the gang before it gets here
	}
	r.clusterOK = s.scratch.bools(&s.scratch.clusterOK, len(s.clusters))
	anyCluster := len(g.Clusters) == 0 && g.ClusterSelector == nil // what clusterMatches says then, without matching labels
	for i := range s.clusters {
		r.clusterOK[i] = anyCluster || clusterMatches(g, sel, s.clusters[i].name, s.clusters[i].labels)
	}
	r.classOK = s.scratch.bools(&s.scratch.classOK, len(s.classes))
	for i := range s.classes {
		c := &s.classes[i]
		r.classOK[i] = r.clusterOK[c.cluster] && productMatches(g.Products, c.product) && tolerates(g.unitTolerations(), c.taints) &&
			(g.Shared == nil || g.Shared.Strategy == "" || g.Shared.Strategy == c.sharing) &&
			(g.Devices == nil || len(g.Roles) > 0 || g.Devices.Matches(c.devices)) &&
			inPools(g.Pools, s.clusters[c.cluster].name, c) &&
			(!g.ComputeDomain || s.cliqueFree(c))
	}
	s.classFit(r, &s.scratch.fit)
	if len(g.Roles) > 0 {
		s.setRoles(r)
	}
}

// clusterMatches reports whether the named cluster with these labels is in
// the gang's cluster list (when it has one) and matches its selector.
func clusterMatches(g *Gang, sel labels.Selector, name string, ls map[string]string) bool {
	if len(g.Clusters) > 0 {
		found := false
		for _, c := range g.Clusters {
			found = found || c == name
		}
		if !found {
			return false
		}
	}
	return sel.Matches(clusterLabels{name: name, ls: ls})
}

// inPools says whether nodes of class c in the named cluster are in one of
// the pools (no pools: anywhere).
func inPools(pools []PoolFilter, cluster string, c *class) bool {
	if len(pools) == 0 {
		return true
	}
	for _, p := range pools {
		if slices.Contains(p.Clusters, cluster) && (len(p.Products) == 0 || slices.Contains(p.Products, c.product)) &&
			(len(p.NodePools) == 0 || slices.Contains(p.NodePools, c.nodePool)) {
			return true
		}
	}
	return false
}

// clusterLabels are a cluster's labels with its name as
// v1alpha1.LabelClusterName, which selectors may use (docs/api.md); the
// hub's name wins over a label of that key the cluster carries.
type clusterLabels struct {
	name string
	ls   map[string]string
}

func (c clusterLabels) Has(k string) bool {
	if k == v1alpha1.LabelClusterName {
		return true
	}
	_, ok := c.ls[k]
	return ok
}

func (c clusterLabels) Lookup(k string) (string, bool) {
	if k == v1alpha1.LabelClusterName {
		return c.name, true
	}
	v, ok := c.ls[k]
	return v, ok
}

func (c clusterLabels) Get(k string) string {
	if k == v1alpha1.LabelClusterName {
		return c.name
	}
	return c.ls[k]
}

func productMatches(products []string, p string) bool {
	if len(products) == 0 {
		return true
	}
	for _, x := range products {
		if x == p {
			return true
		}
	}
	return false
}

// tolerates reports whether the tolerations cover every NoSchedule and
// NoExecute taint.
func tolerates(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tols {
			if toleratesTaint(&tols[j], t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func toleratesTaint(tol *corev1.Toleration, t *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Key != "" && tol.Value == t.Value
	}
	return false
}

// capacity returns how many members of gpm GPUs (or MIG slices) fit on node i.
func (s *Snapshot) capacity(i int32, gpm int32, mig string) int32 {
	n := &s.nodes[i]
	if !n.schedulable {
		return 0
	}
	if mig != "" {
		m := s.slice(i, mig)
		if m == nil {
			return 0
		}
		return m.free() / gpm
	}
	return n.free / gpm
}

// slots returns the members of r that fit on node i for this request.
func (s *Snapshot) slots(r *request, i int32) int32 {
	n := &s.nodes[i]
	if !r.classOK[n.class] {
		return 0
	}
	if s.holders != nil {
		if h := s.holders[i]; h >= 0 && h != r.holder && r.endsAt > s.holdStart[h] {
			return 0 // held for a gang that needs it before r would end
		}
	}
	if r.within >= 0 && n.dom[r.within] != r.withinDom {
		return 0
	}
	return s.capacity(i, r.gpm, r.mig)
}
