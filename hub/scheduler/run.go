// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// Run campaigns for leadership and, while leading, runs cycles on the
// interval and whenever jobs, reservations or inventories change. It
// returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("scheduler"))
	return s.st.RunElected(ctx, Election, s.cfg.Identity, s.lead)
}

// lead runs cycles until leadership or ctx ends.
func (s *Scheduler) lead(ctx context.Context, lead store.Leadership) error {
	leader.Set(1)
	defer leader.Set(0)
	held := lead.Held()
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	s.watch(ctx, poke)
	ticker := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	s.holds = nil
	s.fairLoaded = false // another leader may have advanced the usage meanwhile
	for ctx.Err() == nil {
		res, err := s.Cycle(ctx, &held)
		switch {
		case err != nil && ctx.Err() == nil:
			cycles.WithLabelValues("error").Inc()
			klog.FromContext(ctx).Error(err, "scheduling cycle failed")
		case res.Conflict:
			poke()
		}
		select {
		case <-ctx.Done():
		case <-trigger:
		case <-ticker.C():
		}
	}
	return nil
}

// watch pokes on every change of jobs, reservations and inventories.
func (s *Scheduler) watch(ctx context.Context, poke func()) {
	rev, err := s.st.Revision(ctx)
	if err != nil {
		rev = 0
	}
	go store.Notify(ctx, s.jobs.Watch(ctx, rev), poke)
	go store.Notify(ctx, s.ledger.Reservations().Watch(ctx, rev), poke)
	go store.Notify(ctx, s.inventories.Watch(ctx, rev), poke)
}
