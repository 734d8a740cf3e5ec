// SPDX-License-Identifier: Apache-2.0

package pools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/store"
)

// Fleet is what the controller reads of the fleet and how it drains nodes
// (hub/registry).
type Fleet interface {
	Inventories(ctx context.Context) ([]inventory.Cluster, error)
	ClusterLabels(ctx context.Context) (map[string]map[string]string, error)
	DrainNode(ctx context.Context, cluster, node string, drain bool) error
}

// DefaultInterval is how often the controller refreshes every pool.
const DefaultInterval = 10 * time.Second

// Controller writes pools' status, carries out their drains and labels
// the hub cluster's virtual nodes with their pools.
type Controller struct {
	svc      *Service
	fleet    Fleet
	clock    clock.WithTicker
	interval time.Duration
	held     []store.Cond
	// kube is the hub cluster (nil: no virtual-node labels).
	kube kubernetes.Interface
	// hadPools: the last refresh saw pools (their labels may need removing).
	hadPools bool
}

// WithHubCluster makes the controller label the hub cluster's virtual
// nodes with the pools they hold nodes of (LabelPoolPrefix).
func (c *Controller) WithHubCluster(cs kubernetes.Interface) *Controller {
	c.kube = cs
	return c
}

// NewController returns the controller of svc's pools.
func NewController(svc *Service, fleet Fleet, clk clock.WithTicker, interval time.Duration) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Controller{svc: svc, fleet: fleet, clock: clk, interval: interval}
}

// Lead refreshes every interval until ctx ends, writes guarded by l.Held().
func (c *Controller) Lead(ctx context.Context, l store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("pools"))
	c.held = []store.Cond{l.Held()}
	t := c.clock.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "GPU pool refresh failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Refresh computes every pool's status, drains or undrains its nodes, and
// publishes its metrics.
func (c *Controller) Refresh(ctx context.Context) error {
	ps, err := c.svc.List(ctx)
	if err != nil {
		return err
	}
	if len(ps) == 0 && !c.hadPools {
		return nil // nothing to count, and no virtual-node label left to remove
	}
	c.hadPools = len(ps) > 0
	invs, err := c.fleet.Inventories(ctx)
	if err != nil {
		return err
	}
	labels, err := c.fleet.ClusterLabels(ctx)
	if err != nil {
		return err
	}
	var bound map[string][]string
	if c.svc.queues != nil {
		if bound, err = queuesByPool(ctx, c.svc.queues); err != nil {
			return err
		}
	}
	now := metav1.NewTime(c.clock.Now().UTC().Truncate(time.Second))
	var all []error
	for _, p := range ps {
		st, err := Status(p, invs, labels, bound[p.Name], &p.Status, now)
		if err != nil {
			all = append(all, err)
			continue
		}
		st.Drained = p.Status.Drained
		if err := c.drain(ctx, p, &st); err != nil {
			all = append(all, err)
		}
		observe(p.Name, &st)
		if err := c.write(ctx, p, st); err != nil {
			all = append(all, err)
		}
	}
	if c.kube != nil {
		all = append(all, labelVirtualNodes(ctx, c.kube, vnodePools(ps, invs, labels)))
	}
	return errors.Join(all...)
}

// drain marks the pool's nodes drained in their clusters while spec.drain
// is set, and unmarks those it marked once it is not.
func (c *Controller) drain(ctx context.Context, p *v1alpha1.GPUPool, st *v1alpha1.GPUPoolStatus) error {
	var want []string
	if p.Spec.Drain {
		nodes, err := c.members(ctx, p)
		if err != nil {
			return err
		}
		want = nodes
	}
	var all []error
	keep := st.Drained[:0:0]
	for _, k := range st.Drained {
		if slices.Contains(want, k) {
			keep = append(keep, k)
			continue
		}
		cl, node, _ := strings.Cut(k, "/")
		if err := c.fleet.DrainNode(ctx, cl, node, false); err != nil {
			all = append(all, err)
			keep = append(keep, k)
		}
	}
	for _, k := range want {
		if slices.Contains(keep, k) {
			continue
		}
		cl, node, _ := strings.Cut(k, "/")
		if err := c.fleet.DrainNode(ctx, cl, node, true); err != nil {
			all = append(all, fmt.Errorf("drain %s of pool %s: %w", k, p.Name, err))
			continue
		}
		keep = append(keep, k)
	}
	slices.Sort(keep)
	st.Drained = keep
	return errors.Join(all...)
}

// members lists a pool's nodes as "cluster/node".
func (c *Controller) members(ctx context.Context, p *v1alpha1.GPUPool) ([]string, error) {
	m, err := NewMatcher(p)
	if err != nil {
		return nil, err
	}
	invs, err := c.fleet.Inventories(ctx)
	if err != nil {
		return nil, err
	}
	labels, err := c.fleet.ClusterLabels(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for ci := range invs {
		cl := &invs[ci]
		if !m.Cluster(cl.Name, labels[cl.Name]) {
			continue
		}
		for ni := range cl.Nodes {
			if m.Node(&cl.Nodes[ni]) {
				out = append(out, cl.Name+"/"+cl.Nodes[ni].Name)
			}
		}
	}
	return out, nil
}

// write stores st when it differs from the pool's status in more than
// its time.
func (c *Controller) write(ctx context.Context, p *v1alpha1.GPUPool, st v1alpha1.GPUPoolStatus) error {
	old, st2 := p.Status, st
	old.UpdateTime, st2.UpdateTime = nil, nil
	if equality.Semantic.DeepEqual(old, st2) {
		return nil
	}
	_, _, err := c.svc.pools.GuaranteedUpdate(ctx, p.Name, func(cur *v1alpha1.GPUPool) (*v1alpha1.GPUPool, error) {
		n := cur.DeepCopy()
		n.Status = st
		return n, nil
	}, c.held...)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	return err
}

// queuesByPool maps each pool to the queues naming it.
func queuesByPool(ctx context.Context, ql QueueLister) (map[string][]string, error) {
	out := map[string][]string{}
	opts := store.ListOptions{Limit: 500}
	for {
		qs, cont, _, err := ql.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			for _, p := range q.Spec.Pools {
				out[p] = append(out[p], q.Name)
			}
		}
		if cont == "" {
			return out, nil
		}
		opts.Continue = cont
	}
}
