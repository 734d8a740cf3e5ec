package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// runScheduling starts the leader-elected scheduler and, with a hub
// management cluster (rc not nil), the leader-elected dispatcher.
func runScheduling(ctx context.Context, g *errgroup.Group, st *store.Store, rc *rest.Config) error {
	for _, register := range []func(prometheus.Registerer) error{scheduler.Register, dispatch.Register} {
		if err := register(prometheus.DefaultRegisterer); err != nil {
			return err
		}
	}
	id, _ := os.Hostname()
	id = fmt.Sprintf("%s-%d", id, os.Getpid())
	var opts []scheduler.Option
	if v := os.Getenv("SHOAL_PREEMPT_AFTER"); v != "" { // e.g. 0s in demos; the engine's default is 30m
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("SHOAL_PREEMPT_AFTER: %w", err)
		}
		opts = append(opts, scheduler.WithPlacementOptions(placement.WithPreemptAfter(d)))
	}
	sched := scheduler.New(st, scheduler.Config{Identity: id}, opts...)
	g.Go(func() error { return sched.Run(ctx) })
	if rc == nil {
		klog.FromContext(ctx).Info("No --kubeconfig: jobs are scheduled but not dispatched")
		return nil
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 200, 400 // a gang's members are created and stamped at once
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	disp := dispatch.New(st, cs, dispatch.Config{Identity: id})
	g.Go(func() error { return disp.Run(ctx) })
	return nil
}
