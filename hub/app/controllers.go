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
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/kubeclient"
)

// loop is a part of the hub that runs until its ctx ends.
type loop func(context.Context) error

// Names of the leader-elected parts' readiness checks (/readyz?verbose).
const (
	// CheckSchedulerLeader fails while this replica leads (LeaderElection)
	// but its scheduler has not completed a scheduling cycle.
	CheckSchedulerLeader = "scheduler-leader"
	// CheckDispatchSynced fails while this replica leads (LeaderElection)
	// but its dispatcher has not completed a pass on synced member pod
	// caches.
	CheckDispatchSynced = "dispatch-synced"
)

// schedulingParts are the leader-elected scheduler and, with a hub
// management cluster (rc not nil), the leader-elected dispatcher, less
// those Config.Disable names, and their readiness checks.
func schedulingParts(ctx context.Context, st *store.Store, c *Config, rc *rest.Config) ([]leaderPart, []server.ReadyCheck, error) {
	var loops []leaderPart
	var checks []server.ReadyCheck
	if c.runs(Scheduler) {
		cfg := c.Scheduler
		if cfg.Identity == "" {
			cfg.Identity = c.Identity
		}
		s := scheduler.New(st, cfg, c.SchedulerOptions...)
		loops = append(loops, leaderPart{legacyElection: scheduler.Election, lead: s.Lead})
		checks = append(checks, server.ReadyCheck{Name: CheckSchedulerLeader, Check: s.State().Check})
	}
	if !c.runs(Dispatcher) {
		return loops, checks, nil
	}
	if rc == nil {
		klog.FromContext(ctx).Info("No hub cluster: jobs are scheduled but not dispatched")
		return loops, checks, nil
	}
	// A gang's members are created and stamped at once.
	cs, err := kubernetes.NewForConfig(kubeclient.Sized(rc, 200, 400))
	if err != nil {
		return nil, nil, fmt.Errorf("hub cluster client: %w", err)
	}
	cfg := c.Dispatch
	if cfg.Identity == "" {
		cfg.Identity = c.Identity
	}
	d := dispatch.New(st, cs, cfg)
	checks = append(checks, server.ReadyCheck{Name: CheckDispatchSynced, Check: d.State().Check})
	return append(loops, leaderPart{legacyElection: dispatch.Election, lead: d.Lead}), checks, nil
}
