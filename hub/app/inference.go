// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// withInference runs the inference controller beside the scheduler: one
// replica, the leader, creates and cancels replica jobs.
func withInference(parts []leaderPart, svc *inference.Service, reg *registry.Registry) []leaderPart {
	ctrl := inference.NewController(svc, readyClusters(reg), clock.RealClock{}, inference.DefaultInterval)
	return besideScheduler(parts, ctrl.Lead)
}

// readyClusters lists the Ready clusters a selector matches, from the
// registry, with each cluster's name as the label
// v1alpha1.LabelClusterName (as the scheduler sees it).
func readyClusters(reg *registry.Registry) inference.Clusters {
	return func(ctx context.Context, ls *metav1.LabelSelector) ([]string, error) {
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
}
