// SPDX-License-Identifier: Apache-2.0

package scheduler

import "github.com/shoal-dev/shoal/federation/placement"

// placementSnapshot builds the cycle's placement snapshot (true: from
// what changed since the last take). When the snapshot builder holds the
// running gangs of the join's last take, it is given only what changed
// since (placement.Builder.SnapshotChanged): the reservations changed,
// added or removed (or whose job changed), and of the rest only those
// whose running gang changes on its own — started and committed but not
// yet counted in the inventories (Counted turns true as its clusters
// report after the commit; allocation) — where every one of 65,000
// reservations was made into a running gang and visited by the builder
// each cycle (docs/scale.md, session 20). A counted gang turns uncounted
// only when its reservation or job changes or a cluster's report goes back
// in time or away; then, after a layout change, and when the builder does
// not hold the last take's gangs, every reservation is given.
func (s *Scheduler) placementSnapshot(f *fleet) (*placement.Snapshot, bool) {
	if rc := f.running; rc != nil && rc.valid && s.built.join != nil && rc.since == s.built && s.receivedOnward(f) {
		var ch placement.RunningChange
		ch.Gone = rc.goneIDs
		for _, name := range rc.goneNames {
			delete(s.volatile, name)
		}
		for _, i := range rc.at {
			delete(s.volatile, f.booked[i].res.Name)
		}
		for name, b := range s.volatile {
			a := b.form
			was := a.Counted
			f.allocation(&b)
			if a.Counted != was {
				ch.Set = append(ch.Set, a)
			}
			if !volatile(&b) {
				delete(s.volatile, name)
			}
		}
		for _, i := range rc.at {
			b := &f.booked[i]
			ch.Set = append(ch.Set, f.allocation(b))
			if volatile(b) {
				s.volatile[b.res.Name] = *b
			}
		}
		if snap, ok := s.snaps.SnapshotChanged(f.clusters, ch); ok {
			s.built, s.received = rc.took, f.received
			return snap, true
		}
	}
	s.allocs = f.allocations(s.allocs[:0])
	s.volatile = map[string]bookedJob{}
	for i := range f.booked {
		if b := &f.booked[i]; volatile(b) {
			s.volatile[b.res.Name] = *b
		}
	}
	s.built, s.received = takeID{}, f.received
	if f.running != nil {
		s.built = f.running.took
	}
	return s.snaps.Snapshot(f.clusters, s.allocs), false
}

// volatile says whether a reservation's running gang, as allocation last
// made it, may change while neither the reservation nor its job does: it
// started and its dispatch committed, but it is not counted in the
// inventories yet (a gang not started, or not committed, stays uncounted
// until its reservation or job changes).
func volatile(b *bookedJob) bool {
	return !b.res.Object.Started.IsZero() && b.job != nil && !b.job.committed.IsZero() && !b.form.Counted
}

// receivedOnward says whether every cluster's report the last snapshot
// was built with is still in f, received no earlier: a counted gang stays
// counted.
func (s *Scheduler) receivedOnward(f *fleet) bool {
	for c, t := range s.received {
		if at, ok := f.received[c]; !ok || at.Before(t) {
			return false
		}
	}
	return true
}
