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
	return s.st.RunElected(ctx, Election, s.cfg.Identity, s.Lead)
}

// Lead runs cycles, every write guarded by lead.Held(), until leadership
// or ctx ends, on the caches it starts (caches.go: a list and a watch of
// every kind a cycle reads, stopped when it returns): the term of a leadership won by Run or shared with the
// other leader-elected parts (hub/app). It returns nil when ctx ends.
func (s *Scheduler) Lead(ctx context.Context, lead store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("scheduler"))
	leader.Set(1)
	defer leader.Set(0)
	defer forgetFleet()
	held := lead.Held()
	s.state.Lead(lead.Revision())
	defer s.state.Lost()
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	c := s.newCaches()
	stop, err := c.start(ctx, poke)
	if err != nil {
		return nil // ctx ended before the caches listed
	}
	s.caches, s.wrote, s.booked = c, 0, 0
	defer func() { s.caches = nil; stop() }()
	ticker := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	s.holds = nil
	s.fairLoaded = false // another leader may have advanced the usage and the holds meanwhile
	for ctx.Err() == nil {
		res, err := s.Cycle(ctx, &held)
		s.state.Synced(err)
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
