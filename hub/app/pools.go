// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/pools"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// withPools runs the GPU pools' controller beside the scheduler; with a
// hub cluster (rc not nil) it labels the virtual nodes with their pools.
func withPools(parts []leaderPart, svc *pools.Service, reg *registry.Registry, rc *rest.Config) ([]leaderPart, error) {
	ctrl := pools.NewController(svc, poolFleet{reg}, clock.RealClock{}, pools.DefaultInterval)
	if rc != nil {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("hub cluster client: %w", err)
		}
		ctrl.WithHubCluster(cs)
	}
	return besideScheduler(parts, ctrl.Lead), nil
}

// poolFleet is the registry as the pools' controller reads and drains it.
type poolFleet struct{ reg *registry.Registry }

func (f poolFleet) Inventories(ctx context.Context) ([]inventory.Cluster, error) {
	return f.reg.Inventories(ctx)
}

func (f poolFleet) ClusterLabels(ctx context.Context) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	opts := store.ListOptions{Limit: 500}
	for {
		res, err := f.reg.ListClusters(ctx, opts, "")
		if err != nil {
			return nil, err
		}
		for _, c := range res.Items {
			out[c.Name] = c.Labels
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

func (f poolFleet) DrainNode(ctx context.Context, cluster, node string, drain bool) error {
	_, _, err := f.reg.DrainNode(ctx, cluster, node, drain)
	return err
}
