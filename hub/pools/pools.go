// SPDX-License-Identifier: Apache-2.0

// Package pools owns GPUPool records (docs/pools.md): the Service stores
// them; Members, a pure function, says which nodes of the fleet are in a
// pool; the leader-run Controller writes each pool's status (nodes, GPUs,
// idle nodes of scale-to-zero pools), publishes it as metrics, and drains
// and undrains a pool's nodes in their clusters. The scheduler reads pools
// to keep gangs off cordoned pools and within their queue's pools.
package pools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of GPUPool records.
const Kind = "gpupools"

// NewCollection is the GPUPool records of st.
func NewCollection(st *store.Store) *store.Collection[*v1alpha1.GPUPool] {
	return store.NewCollection(st, Kind, store.JSONCodec[*v1alpha1.GPUPool]())
}

// NewReader is a read-only view of the GPUPool records (the scheduler's).
func NewReader(st *store.Store) store.Reader[*v1alpha1.GPUPool] {
	return store.NewReader(st, Kind, store.JSONCodec[*v1alpha1.GPUPool]())
}

// QueueLister lists queues, to refuse deleting a pool a queue is bound to.
type QueueLister interface {
	List(ctx context.Context, opts store.ListOptions) ([]*v1alpha1.Queue, string, int64, error)
}

// Service stores GPUPools.
type Service struct {
	pools  *store.Collection[*v1alpha1.GPUPool]
	queues QueueLister
	clock  clock.PassiveClock
}

// New returns the service on st; queues may be nil (no delete check).
func New(st *store.Store, queues QueueLister) *Service {
	return &Service{pools: NewCollection(st), queues: queues, clock: clock.RealClock{}}
}

func prepare(in *v1alpha1.GPUPool) (*v1alpha1.GPUPool, error) {
	p := &v1alpha1.GPUPool{TypeMeta: in.TypeMeta, Spec: *in.Spec.DeepCopy()}
	p.Name, p.Labels, p.Annotations = in.Name, in.Labels, in.Annotations
	p.APIVersion, p.Kind = v1alpha1.APIVersion, v1alpha1.KindGPUPool
	if p.Spec.Drain {
		p.Spec.Cordoned = true // a drained pool takes no new gangs either
	}
	return p, v1alpha1.ValidateGPUPool(p)
}

// Create stores a new pool.
func (s *Service) Create(ctx context.Context, in *v1alpha1.GPUPool) (*v1alpha1.GPUPool, int64, error) {
	p, err := prepare(in)
	if err != nil {
		return nil, 0, err
	}
	p.UID, p.CreationTimestamp, p.Generation = uuid.NewUUID(), metav1.NewTime(s.clock.Now()), 1
	rev, err := s.pools.Create(ctx, p.Name, p)
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil, 0, errs.Of(store.ErrAlreadyExists, "GPU pool %q already exists; `shoal pool get %s` shows it", p.Name, p.Name)
	}
	if err != nil {
		return nil, 0, err
	}
	return withRevision(p, rev), rev, nil
}

// Update replaces a pool's spec (rev > 0: only at that revision).
func (s *Service) Update(ctx context.Context, in *v1alpha1.GPUPool, rev int64) (*v1alpha1.GPUPool, int64, error) {
	p, err := prepare(in)
	if err != nil {
		return nil, 0, err
	}
	cur, curRev, err := s.Get(ctx, p.Name)
	if err != nil {
		return nil, 0, err
	}
	if rev > 0 && rev != curRev {
		return nil, 0, errs.Of(store.ErrConflict, "GPU pool %q is at revision %d, not %d; get it again", p.Name, curRev, rev)
	}
	next := cur.DeepCopy()
	if !equality.Semantic.DeepEqual(next.Spec, p.Spec) {
		next.Spec = p.Spec
		next.Generation++
	}
	next.Labels, next.Annotations, next.ResourceVersion = p.Labels, p.Annotations, ""
	nrev, err := s.pools.Update(ctx, p.Name, next, curRev)
	if err != nil {
		return nil, 0, err
	}
	return withRevision(next, nrev), nrev, nil
}

// Get returns a pool.
func (s *Service) Get(ctx context.Context, name string) (*v1alpha1.GPUPool, int64, error) {
	p, rev, err := s.pools.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, errs.Of(store.ErrNotFound, "GPU pool %q not found; `shoal pool list` shows the pools", name)
	}
	if err != nil {
		return nil, 0, err
	}
	return withRevision(p, rev), rev, nil
}

// List returns every pool, sorted by name.
func (s *Service) List(ctx context.Context) ([]*v1alpha1.GPUPool, error) {
	var out []*v1alpha1.GPUPool
	opts := store.ListOptions{Limit: 500}
	for {
		res, err := s.pools.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range res.Items {
			out = append(out, withRevision(it.Object, it.Revision))
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// Delete removes a pool no queue is bound to.
func (s *Service) Delete(ctx context.Context, name string) error {
	_, rev, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	if s.queues != nil {
		bound, err := boundQueues(ctx, s.queues, name)
		if err != nil {
			return err
		}
		if len(bound) > 0 {
			return errs.Precondition(fmt.Sprintf("queues %v are bound to GPU pool %q", bound, name),
				"remove the pool from their spec.pools first (`shoal queue update`)")
		}
	}
	return s.pools.Delete(ctx, name, rev)
}

// Exists reports whether every pool named exists (queues' check).
func (s *Service) Exists(ctx context.Context, names []string) error {
	for _, n := range names {
		if _, _, err := s.pools.Get(ctx, n); errors.Is(err, store.ErrNotFound) {
			return errs.Precondition(fmt.Sprintf("spec.pools: GPU pool %q does not exist", n), "create it first (`shoal pool create`); `shoal pool list` shows the pools")
		} else if err != nil {
			return err
		}
	}
	return nil
}

// boundQueues lists the queues naming pool in spec.pools.
func boundQueues(ctx context.Context, ql QueueLister, pool string) ([]string, error) {
	var out []string
	opts := store.ListOptions{Limit: 500}
	for {
		qs, cont, _, err := ql.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			if slices.Contains(q.Spec.Pools, pool) {
				out = append(out, q.Name)
			}
		}
		if cont == "" {
			return out, nil
		}
		opts.Continue = cont
	}
}

func withRevision(p *v1alpha1.GPUPool, rev int64) *v1alpha1.GPUPool {
	p.ResourceVersion = strconv.FormatInt(rev, 10)
	return p
}

// Matcher says whether a node of a cluster is in a pool.
type Matcher struct {
	sel       labels.Selector
	products  []string
	nodePools []string
}

// NewMatcher compiles a pool's spec.
func NewMatcher(p *v1alpha1.GPUPool) (*Matcher, error) {
	m := &Matcher{sel: labels.Everything(), products: p.Spec.GPUProducts, nodePools: p.Spec.NodePools}
	if p.Spec.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("GPU pool %s: %w", p.Name, err)
		}
		m.sel = sel
	}
	return m, nil
}

// Cluster says whether the pool may have nodes in a cluster of these
// labels (its name is LabelClusterName).
func (m *Matcher) Cluster(name string, ls map[string]string) bool {
	set := labels.Set{}
	for k, v := range ls {
		set[k] = v
	}
	set[v1alpha1.LabelClusterName] = name
	return m.sel.Matches(set)
}

// Node says whether a node of a matching cluster is in the pool.
func (m *Matcher) Node(n *inventory.Node) bool {
	return (len(m.products) == 0 || slices.Contains(m.products, n.Product)) &&
		(len(m.nodePools) == 0 || slices.Contains(m.nodePools, n.NodePool))
}

// Filter is the pool as the placement engine filters nodes by it: the
// clusters it may span, its products and node pools (empty: any).
func (m *Matcher) Filter(clusters []string) placement.PoolFilter {
	return placement.PoolFilter{Clusters: clusters, Products: m.products, NodePools: m.nodePools}
}

// Status computes a pool's status over the clusters' inventories (with
// their labels): its nodes and GPUs, and for a scale-to-zero pool its
// idle nodes, each idle since the time prev says or now.
func Status(p *v1alpha1.GPUPool, clusters []inventory.Cluster, clusterLabels map[string]map[string]string, queues []string,
	prev *v1alpha1.GPUPoolStatus, now metav1.Time) (v1alpha1.GPUPoolStatus, error) {
	m, err := NewMatcher(p)
	if err != nil {
		return v1alpha1.GPUPoolStatus{}, err
	}
	since := map[string]metav1.Time{}
	if prev != nil {
		for _, n := range prev.IdleNodes {
			since[n.Cluster+"/"+n.Node] = n.Since
		}
	}
	st := v1alpha1.GPUPoolStatus{Queues: queues, UpdateTime: &now}
	for ci := range clusters {
		c := &clusters[ci]
		if !m.Cluster(c.Name, clusterLabels[c.Name]) {
			continue
		}
		in := false
		for ni := range c.Nodes {
			n := &c.Nodes[ni]
			if !m.Node(n) {
				continue
			}
			in = true
			st.Nodes++
			st.GPUs += int32(n.GPUs)
			st.UsedGPUs += int32(min(n.UsedGPUs, n.GPUs))
			st.FreeGPUs += int32(n.FreeGPUs())
			if p.Spec.ScaleToZero && n.UsedGPUs == 0 && n.GPUs > 0 {
				t, ok := since[c.Name+"/"+n.Name]
				if !ok {
					t = now
				}
				st.IdleNodes = append(st.IdleNodes, v1alpha1.IdleNode{Cluster: c.Name, Node: n.Name, Since: t})
			}
		}
		if in {
			st.Clusters = append(st.Clusters, c.Name)
		}
	}
	sort.Strings(st.Clusters)
	return st, nil
}
