// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/pools"
)

// resolvePools compiles the fleet's GPU pools (docs/pools.md): each pool's
// node filter over the registered clusters its selector matches, and the
// nodes of cordoned (or draining) pools marked unschedulable, so no new
// gang lands there. A pool whose selector does not compile filters to no
// node.
func (f *fleet) resolvePools() {
	f.poolFilters = map[string]placement.PoolFilter{}
	for _, p := range f.pools {
		m, err := pools.NewMatcher(p)
		if err != nil {
			f.poolFilters[p.Name] = placement.PoolFilter{}
			continue
		}
		var clusters []string
		for _, cl := range f.registered {
			if m.Cluster(cl.Name, cl.Object.Labels) {
				clusters = append(clusters, cl.Name)
			}
		}
		f.poolFilters[p.Name] = m.Filter(clusters)
		if !p.Spec.Cordoned && !p.Spec.Drain {
			continue
		}
		for ci := range f.clusters {
			cl := &f.clusters[ci]
			if !m.Cluster(cl.Name, f.labelsOf(cl.Name)) {
				continue
			}
			for ni := range cl.Nodes {
				if n := &cl.Nodes[ni]; m.Node(n) && !n.Unschedulable {
					f.ownNodes(ci)[ni].Unschedulable = true
				}
			}
		}
	}
}

// labelsOf is a registered cluster's labels.
func (f *fleet) labelsOf(cluster string) map[string]string {
	for _, cl := range f.registered {
		if cl.Name == cluster {
			return cl.Object.Labels
		}
	}
	return nil
}

// gangPools is the node filters of a queue's effective pools (nil:
// anywhere); a pool that does not exist filters to no node, so the
// queue's jobs wait rather than run outside their pools. It is worked out
// once per queue and fleet; callers must not change it.
func (f *fleet) gangPools(queue string) []placement.PoolFilter {
	if out, ok := f.queuePools[queue]; ok {
		return out
	}
	if f.queuePools == nil {
		f.queuePools = map[string][]placement.PoolFilter{}
	}
	out := f.effectivePools(queue)
	f.queuePools[queue] = out
	return out
}

// effectivePools is gangPools worked out.
func (f *fleet) effectivePools(queue string) []placement.PoolFilter {
	specs := func(name string) (*v1alpha1.QueueSpec, bool) {
		for _, q := range f.queues {
			if q.Name == name {
				return &q.Spec, true
			}
		}
		return nil, false
	}
	names := v1alpha1.EffectivePools(queue, specs)
	if len(names) == 0 {
		return nil
	}
	out := make([]placement.PoolFilter, 0, len(names))
	for _, n := range names {
		out = append(out, f.poolFilters[n]) // the zero filter of a missing pool matches nothing
	}
	return out
}

// gangOf is GangOf with the queue's pools.
func (f *fleet) gangOf(j *v1alpha1.Job) placement.Gang {
	g := GangOf(j)
	g.Pools = f.gangPools(j.Spec.Queue)
	return g
}
