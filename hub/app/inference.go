// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/pools"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// withInference runs the inference controller beside the scheduler: one
// replica, the leader, creates and cancels replica jobs.
func withInference(parts []leaderPart, svc *inference.Service, reg *registry.Registry, pv poolView) []leaderPart {
	ctrl := inference.NewController(svc, spreadClusters(reg, pv), clock.RealClock{}, inference.DefaultInterval)
	return besideScheduler(parts, ctrl.Lead)
}

// poolView is what spread needs of queues and GPU pools: a queue's spec,
// and every pool (with its status' clusters).
type poolView struct {
	queue func(ctx context.Context, name string) (*v1alpha1.Queue, error)
	pools func(ctx context.Context) ([]*v1alpha1.GPUPool, error)
}

// newPoolView reads queues and pools through their services.
func newPoolView(qs *queues.Service, ps *pools.Service) poolView {
	return poolView{
		queue: func(ctx context.Context, name string) (*v1alpha1.Queue, error) {
			q, _, err := qs.Get(ctx, name)
			return q, err
		},
		pools: ps.List,
	}
}

// spreadClusters lists the Ready clusters a service's replicas may be
// pinned to: those its cluster selector matches (with each cluster's name
// as the label v1alpha1.LabelClusterName, as the scheduler sees it) and,
// when its queue is bound to GPU pools, that hold nodes of one of those
// pools that is neither cordoned nor drained. A pin elsewhere could never be placed: the
// scheduler keeps the queue's jobs on its pools' nodes.
func spreadClusters(reg *registry.Registry, pv poolView) inference.Clusters {
	return func(ctx context.Context, s *v1alpha1.InferenceService) ([]string, error) {
		out, err := readyClusters(ctx, reg, s.Spec.Placement.ClusterSelector)
		if err != nil || pv.queue == nil || pv.pools == nil {
			return out, err
		}
		allowed, bound, err := poolClusters(ctx, pv, s.Spec.Queue)
		if err != nil || !bound {
			return out, err
		}
		kept := out[:0]
		for _, c := range out {
			if allowed[c] {
				kept = append(kept, c)
			}
		}
		return kept, nil
	}
}

// poolClusters returns the clusters with nodes in the uncordoned pools a
// queue is bound to (neither cordoned nor drained; its own or its nearest ancestor's spec.pools), and
// whether it is bound at all.
func poolClusters(ctx context.Context, pv poolView, queue string) (map[string]bool, bool, error) {
	var lookupErr error
	names := v1alpha1.EffectivePools(queue, func(name string) (*v1alpha1.QueueSpec, bool) {
		q, err := pv.queue(ctx, name)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && lookupErr == nil {
				lookupErr = err
			}
			return nil, false
		}
		return &q.Spec, true
	})
	if lookupErr != nil || len(names) == 0 {
		return nil, false, lookupErr
	}
	ps, err := pv.pools(ctx)
	if err != nil {
		return nil, true, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	allowed := map[string]bool{}
	for _, p := range ps {
		if want[p.Name] && !p.Spec.Cordoned && !p.Spec.Drain {
			for _, c := range p.Status.Clusters {
				allowed[c] = true
			}
		}
	}
	return allowed, true, nil
}

// readyClusters lists the Ready clusters a selector matches, from the
// registry, with each cluster's name as the label
// v1alpha1.LabelClusterName (as the scheduler sees it).
func readyClusters(ctx context.Context, reg *registry.Registry, ls *metav1.LabelSelector) ([]string, error) {
	sel := labels.Everything()
	if ls != nil {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, err
		}
		sel = s
	}
	var out []string
	opts := store.ListOptions{Limit: 500}
	for {
		res, err := reg.ListClusters(ctx, opts, "")
		if err != nil {
			return nil, err
		}
		for _, c := range res.Items {
			set := labels.Set{}
			for k, v := range c.Labels {
				set[k] = v
			}
			set[v1alpha1.LabelClusterName] = c.Name
			if c.Status.State == v1alpha1.ClusterReady && sel.Matches(set) {
				out = append(out, c.Name)
			}
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}
