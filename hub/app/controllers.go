// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// loop is a part of the hub that runs until its ctx ends.
type loop func(context.Context) error

// schedulingLoops are the leader-elected scheduler and, with a hub
// management cluster (rc not nil), the leader-elected dispatcher, less
// those Config.Disable names.
func schedulingLoops(ctx context.Context, st *store.Store, c *Config, rc *rest.Config) ([]loop, error) {
	var loops []loop
	if c.runs(Scheduler) {
		cfg := c.Scheduler
		if cfg.Identity == "" {
			cfg.Identity = c.Identity
		}
		loops = append(loops, scheduler.New(st, cfg, c.SchedulerOptions...).Run)
	}
	if !c.runs(Dispatcher) {
		return loops, nil
	}
	if rc == nil {
		klog.FromContext(ctx).Info("No hub cluster: jobs are scheduled but not dispatched")
		return loops, nil
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 200, 400 // a gang's members are created and stamped at once
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("hub cluster client: %w", err)
	}
	cfg := c.Dispatch
	if cfg.Identity == "" {
		cfg.Identity = c.Identity
	}
	return append(loops, dispatch.New(st, cs, cfg).Run), nil
}
