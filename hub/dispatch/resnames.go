// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// reservationNames is the names of the jobs holding a reservation, kept
// while leading from a keys-only list and the reservations' watch
// (followReservations); each leadership has its own (Dispatcher.resNames). A job queued by a change of its record — a
// pending job's submission, each of its explanations — that has no
// reservation and no member is reconciled without a store read: every
// reconcile read its reservation before, about 800,000 reads in the
// 100,000-job load run of docs/scale.md, most of them of reservations
// that did not exist.
//
// The set only ever says "none" for a job whose reservation's creation
// the watch had not delivered yet; the delivery queues the job again, after
// the set has it, so the job's next reconcile reads the reservation. A
// job with members, or a name the set holds, is read from the store as
// before: the set never stands in for the record.
type reservationNames struct {
	mu     sync.RWMutex
	synced bool // the set is current (a list, then every event after it)
	names  map[string]struct{}
}

// mayHave reports whether job may hold a reservation: the set holds it,
// or the set is not current (before the first list, after a watch error).
func (r *reservationNames) mayHave(job string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.synced {
		return true
	}
	_, ok := r.names[job]
	return ok
}

// load replaces the set with a list's names and marks it current.
func (r *reservationNames) load(items []store.Item[struct{}]) {
	m := make(map[string]struct{}, len(items))
	for _, it := range items {
		m[it.Name] = struct{}{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names, r.synced = m, true
}

// apply records one watch event (not an Error).
func (r *reservationNames) apply(ev store.WatchEvent[struct{}]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.synced {
		return
	}
	if ev.Type == store.Deleted {
		delete(r.names, ev.Name)
		return
	}
	r.names[ev.Name] = struct{}{}
}

// unsync marks the set not current: every job may hold a reservation.
func (r *reservationNames) unsync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names, r.synced = nil, false
}

// followReservations keeps names current and queues (add) the job of every
// reservation that changes, after the set has the change, until ctx ends.
// It lists the names at revision from (the revision the leadership's other
// watches start after), then watches from the list's revision; after a
// failed list or a watch error (a compacted history) the set is not
// current, a full sweep is asked for (poke) and it lists again, now.
func (d *Dispatcher) followReservations(ctx context.Context, names *reservationNames, from int64, add func(string), poke func()) {
	defer names.unsync()
	res := d.ledger.Reservations()
	for ctx.Err() == nil {
		list, err := res.ListNames(ctx, from)
		from = 0
		if err != nil {
			if ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "dispatch: list the reservations' names")
				poke()
				t := time.NewTimer(time.Second)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
			continue
		}
		names.load(list.Items)
		for ev := range res.WatchNames(ctx, list.Revision) {
			if ev.Type == store.Error {
				break
			}
			names.apply(ev)
			add(ev.Name)
		}
		names.unsync()
		if ctx.Err() == nil {
			poke() // a watch error: the events it lost are swept
		}
	}
}
