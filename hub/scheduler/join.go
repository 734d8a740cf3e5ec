// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"slices"
	"sync"
)

// reservationJoin is every reservation with its job, kept as either
// changes — a reservation's under the reservations cache's lock
// (reservationChange), a job's under the jobs cache's (change), each
// under mu as well — so that a cycle takes one dense array (take; its
// copy changed only where entries changed since) instead of looking up
// each reservation's job by name: at 65,000
// reservations those lookups were a quarter of a cycle's CPU at F-XL
// (docs/scale.md, session 18).
type reservationJoin struct {
	mu sync.Mutex
	// entries are the reservations with their jobs, in no order; at is
	// each one's place.
	entries []bookedJob
	at      map[string]int
	// unjoined are the reservations whose job is looked up by the next
	// take (new since, or listed anew); every one when all is set (the
	// jobs were listed anew).
	unjoined map[string]struct{}
	all      bool
	// copied is the cycles' copy of entries, brought up to date at each
	// take by copying only the places changed since (touched, once each:
	// isTouched), where a take copied all 65,000 entries (docs/scale.md,
	// session 20). It is the last take's fleet's booked, read by that
	// cycle until the next take.
	copied    []bookedJob
	touched   []int32
	isTouched []bool
	// held, terminating and reservedPending are what the entries' jobs
	// count (fleet.held, fleet.terminating, fleet.reservedPending), kept
	// as entries change (count), where a cycle counted 65,000 entries.
	held            map[string]*queueTally
	terminating     map[string]string
	reservedPending map[string]int
	// changed names the reservations changed, added or removed since the
	// last take (or their job changed), gone the gang IDs of the removed
	// ones: the take hands them to the cycle (runningChanges), whose
	// placement snapshot then books only those again. takes counts the
	// takes; emptied says the join was emptied since the last one (its
	// removals were not recorded).
	changed map[string]struct{}
	gone    map[string]string
	takes   uint64
	emptied bool
}

// takeID names a take of a join: the cycle whose snapshot builder holds
// the running gangs of take n may be given only what changed since.
type takeID struct {
	join *reservationJoin
	n    uint64
}

// runningChanges is what changed in the join's reservations between two
// takes: the places in the later take's entries of those changed or added
// (at), and the gang IDs and names of those removed. A cycle whose
// snapshot builder holds the running gangs of take since may change them
// by these; valid is false when the join cannot say (it was emptied).
type runningChanges struct {
	since, took takeID
	valid       bool
	at          []int32
	goneIDs     []string
	goneNames   []string
}

// note records that reservation name changed (gone: its gang, removed).
func (j *reservationJoin) note(name string, gone *bookedJob) {
	if j.changed == nil {
		j.changed, j.gone = map[string]struct{}{}, map[string]string{}
	}
	j.changed[name] = struct{}{}
	if gone != nil {
		j.gone[name] = gone.form.Gang.ID
	}
}

// changes hands out what changed since the last take (under mu, after
// the take's joins) and starts counting anew.
func (j *reservationJoin) changes() *runningChanges {
	rc := &runningChanges{since: takeID{j, j.takes}, valid: !j.emptied}
	j.takes++
	rc.took = takeID{j, j.takes}
	for name := range j.changed {
		i, ok := j.at[name]
		if ok {
			rc.at = append(rc.at, int32(i))
		}
		if id, removed := j.gone[name]; removed && (!ok || j.entries[i].form.Gang.ID != id) {
			rc.goneIDs, rc.goneNames = append(rc.goneIDs, id), append(rc.goneNames, name)
		}
	}
	clear(j.changed)
	clear(j.gone)
	j.emptied = false
	return rc
}

// count adds (sign 1) or takes back (-1) what entry e's job counts: its
// queue's tally as booked, whether it is being preempted, and whether it
// is pending. An entry without a job counts nothing.
func (j *reservationJoin) count(e *bookedJob, sign int) {
	a := e.job
	if a == nil {
		return
	}
	if j.held == nil {
		j.held, j.terminating, j.reservedPending = map[string]*queueTally{}, map[string]string{}, map[string]int{}
	}
	q := j.held[a.queue]
	if q == nil {
		q = &queueTally{}
		j.held[a.queue] = q
	}
	q.book(a, e.gpus, sign)
	if q.active == 0 {
		delete(j.held, a.queue)
	}
	if a.preempted {
		if sign > 0 {
			j.terminating[a.Name] = a.preemptedBy
		} else {
			delete(j.terminating, a.Name)
		}
	}
	if a.pending != nil {
		if j.reservedPending[a.Name] += sign; j.reservedPending[a.Name] == 0 {
			delete(j.reservedPending, a.Name)
		}
	}
}

// put makes e entry i (in place of what was there: count sees the
// change) and records that i changed.
func (j *reservationJoin) put(i int, e bookedJob) {
	j.count(&j.entries[i], -1)
	j.entries[i] = e
	j.count(&j.entries[i], 1)
	j.touch(i)
}

// touch records that entry i changed since the last take.
func (j *reservationJoin) touch(i int) {
	if i >= len(j.isTouched) {
		j.isTouched = append(j.isTouched, make([]bool, i+1-len(j.isTouched))...)
	}
	if !j.isTouched[i] {
		j.isTouched[i] = true
		j.touched = append(j.touched, int32(i))
	}
}

// copyOut brings copied up to entries: the places touched since the last
// take (those past the end are gone) and the length.
func (j *reservationJoin) copyOut() []bookedJob {
	n := len(j.entries)
	if cap(j.copied) < n {
		j.copied = slices.Grow(j.copied[:len(j.copied):len(j.copied)], n-len(j.copied))
	}
	if len(j.copied) > n {
		clear(j.copied[n:]) // no references kept past the end
	}
	j.copied = j.copied[:n]
	for _, i := range j.touched {
		j.isTouched[i] = false
		if int(i) < n {
			j.copied[i] = j.entries[i]
		}
	}
	j.touched = j.touched[:0]
	return j.copied
}
