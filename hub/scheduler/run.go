// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"runtime"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/threadprio"
)

// Run campaigns for leadership and, while leading, runs cycles on the
// interval and whenever jobs, reservations or inventories change. It
// returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	return s.st.RunElected(ctx, Election, s.cfg.Identity, s.Lead)
}

// pokeAfter returns a function that pokes after a while, once for any
// number of asks whose time an earlier-scheduled poke already covers.
func pokeAfter(poke func()) func(time.Duration) {
	var mu sync.Mutex
	var next time.Time // the latest poke scheduled
	return func(d time.Duration) {
		now := time.Now()
		at := now.Add(d)
		mu.Lock()
		defer mu.Unlock()
		if next.After(now) && !next.After(at) {
			return // a poke comes before this one is due
		}
		next = at
		time.AfterFunc(d, poke)
	}
}

// Lead runs cycles, every write guarded by lead.Held(), until leadership
// or ctx ends, on the caches it starts (caches.go: a list and a watch of
// every kind a cycle reads, stopped when it returns): the term of a leadership won by Run or shared with the
// other leader-elected parts (hub/app). It returns nil when ctx ends.
func (s *Scheduler) Lead(ctx context.Context, lead store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("scheduler"))
	// The cycles run on a thread of their own, whose CPU time is then
	// theirs (shoal_scheduler_cycle_cpu_seconds): the wall time of a cycle
	// on a busy machine is mostly the wait for a core.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if n := s.cfg.CycleNice; n != 0 {
		prev, err := threadprio.Set(n)
		if err != nil {
			klog.FromContext(ctx).Info("scheduling cycles run at the process's nice value", "wanted", n, "err", err)
		} else {
			defer func() { _ = threadprio.Restore(prev) }() // before the thread goes back to the runtime's pool
			if n < prev {
				defer spareProcs(klog.FromContext(ctx))()
			}
		}
	}
	s.threadCPU = true
	defer func() { s.threadCPU = false }()
	leader.Set(1)
	defer leader.Set(0)
	defer func() { forgetFleet(); s.gpus = gpuView{} }()
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
	s.wroteMu.Lock()
	s.wrote = 0
	s.wroteMu.Unlock()
	s.caches, s.booked = c, 0
	s.explainer = newExplainer(ctx)
	s.queueWriter = newQueueWriter(ctx, s.writeQueue)
	s.queueWritten = map[string]time.Time{}
	s.pokeAt = pokeAfter(poke)
	defer func() {
		// The snapshot's running gangs as given from the caches' join go
		// with the caches (a later leadership builds afresh).
		s.explainer.wait() // ctx has ended: the writes in flight end, their guards fail
		s.queueWriter.wait()
		s.explainer, s.queueWriter = nil, nil
		s.caches, s.queueWritten, s.pokeAt = nil, nil, nil
		s.built, s.volatile, s.received = takeID{}, nil, nil
		stop()
	}()
	ticker := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	s.holds = nil
	s.fairLoaded = false // another leader may have advanced the usage and the holds meanwhile
	for ctx.Err() == nil {
		began := time.Now()
		res, err := s.Cycle(ctx, &held)
		ended := time.Now()
		s.state.Synced(err)
		switch {
		case err != nil && ctx.Err() == nil:
			cycles.WithLabelValues("error").Inc()
			klog.FromContext(ctx).Error(err, "scheduling cycle failed")
		case res.Conflict:
			// The next cycle's view holds the explanations written so far:
			// a booking fails its guard on a job explained under it.
			s.wroteAt(s.explainer.written())
			poke()
		}
		select {
		case <-ctx.Done():
		case <-trigger:
		case <-ticker.C():
		}
		if gap := s.pauseAfter(res, err, ended.Sub(began)) - time.Since(ended); gap > 0 {
			pauses.Inc()
			select {
			case <-ctx.Done():
			case <-time.After(gap):
			}
		}
	}
	return nil
}

// pauseAfter is the least time between the end of a cycle that took d
// and the start of the next (Config.Pace): none after a cycle that placed
// or preempted a gang, conflicted or failed (the next one may have work
// to do at once: capacity is there, or it must decide again), else as
// long as the cycle took. A cycle that changed nothing (the fleet full,
// new jobs only explained) is what runs back to back under a steady
// intake; placements are not slowed by the pause. It is real time
// whatever the clock: it bounds the CPU the cycles take.
func (s *Scheduler) pauseAfter(res Result, err error, d time.Duration) time.Duration {
	if s.cfg.Pace <= 0 || err != nil || res.Conflict || len(res.Placed) > 0 || len(res.Preempted) > 0 {
		return 0
	}
	return min(time.Duration(float64(d)*s.cfg.Pace), s.cfg.Interval)
}
