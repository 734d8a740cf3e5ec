// SPDX-License-Identifier: Apache-2.0

package scheduler

import "context"

// FairShareRecord is the name of the one fair-share record, for the test
// that makes a new leader forget it.
const FairShareRecord = fairShareRecord

// HoldsRecord is the name of the head-of-queue reservations record.
const HoldsRecord = holdsRecord

// StartCaches starts the watch-fed caches a leader's cycles decide on, as
// Lead does, for tests and benchmarks that call Cycle themselves; stop ends
// them (Cycle then lists the store afresh again).
func (s *Scheduler) StartCaches(ctx context.Context, poke func()) (stop func(), err error) {
	c := s.newCaches()
	end, err := c.start(ctx, poke)
	if err != nil {
		return nil, err
	}
	s.caches = c
	return func() { s.caches, s.built, s.volatile, s.received = nil, takeID{}, nil, nil; end() }, nil
}

// CacheRevision is the revision the inventories' cache is current to (0
// when the caches do not run).
func (s *Scheduler) CacheRevision() int64 {
	if s.caches == nil {
		return 0
	}
	return s.caches.inventories.revision()
}

// JobsCacheRevision is the revision the jobs' cache is current to (0 when
// the caches do not run).
func (s *Scheduler) JobsCacheRevision() int64 {
	if s.caches == nil {
		return 0
	}
	return s.caches.jobs.revision()
}
