// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// writeQueueStatus asks hub/queues to record, for every queue, its pending
// and active jobs and the GPUs held and borrowed per class (its descendants
// included), where that changed in meaning. Usage is the snapshot's
// (Snapshot.QueueUsage):
// the ledger's reservations plus the placements booked this cycle. A queue
// changed since it was read is left for the next cycle. A leader hands
// the writes to its queue writer and goes on (queueWriter); a cycle on
// its own writes them itself.
func (s *Scheduler) writeQueueStatus(ctx context.Context, f *fleet, usage map[string]placement.QueueUsage, held *store.Cond) error {
	var guards []store.Cond
	if held != nil {
		guards = append(guards, *held)
	}
	for _, q := range f.queues {
		u := usage[q.Name]
		var n queueTally
		if t := f.tally.queues[q.Name]; t != nil {
			n = *t
		}
		st := v1alpha1.QueueStatus{PendingJobs: int32(n.pending), ActiveJobs: int32(n.active),
			UsedGPUs: classGPUs(u.GPUs), BorrowedGPUs: classGPUs(u.Borrowed), Conditions: q.Status.Conditions}
		if queues.StatusEqual(q.Status, st) || s.countsLater(q, st) {
			continue
		}
		w := queueWrite{q: q, rev: f.queueRevs[q.Name], st: st, guards: guards}
		if s.queueWriter != nil {
			s.queueWritten[q.Name] = time.Now()
			s.queueWriter.hand(w)
			continue
		}
		if err := s.writeQueue(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// queueWrite is one queue's status to write: the queue as the cycle read
// it, at rev, and the guards of the cycle's leadership.
type queueWrite struct {
	q      *v1alpha1.Queue
	rev    int64
	st     v1alpha1.QueueStatus
	guards []store.Cond
}

// writeQueue writes one queue's status; a queue changed since it was read
// (a conflict) is left for a later cycle.
func (s *Scheduler) writeQueue(ctx context.Context, w queueWrite) error {
	wrote, err := s.queueStatus.SetStatus(ctx, w.q, w.rev, w.st, w.guards...)
	switch {
	case errors.Is(err, store.ErrConflict):
	case err != nil:
		return fmt.Errorf("queue status: %w", err)
	case wrote:
		klog.FromContext(ctx).V(2).Info("queue status", "queue", w.q.Name, "pending", w.st.PendingJobs,
			"active", w.st.ActiveJobs, "gpus", w.st.UsedGPUs, "borrowed", w.st.BorrowedGPUs)
	}
	return nil
}

// queueWriter writes a leader's queue statuses beside its cycles, as the
// explainer writes explanations (explainer.go): each is a transaction
// that waits for the store's commit, and at F-XL the cycles that wrote one
// spent 15 ms on average in it, up to 180 ms while etcd's disk was busy
// (docs/scale.md, "Session 29"), time in which nothing was placed. The
// writes go one at a time, in the order handed; a queue handed again
// before its write started is written once, with the newest status. A
// write that fails its guard (the queue changed, leadership lost) is
// dropped: the next cycle that sees a difference hands it again.
type queueWriter struct {
	ctx   context.Context
	log   klog.Logger
	write func(context.Context, queueWrite) error
	mu    sync.Mutex
	order []string              // queues handed and not yet taken, first handed first
	next  map[string]queueWrite // the newest status handed per queue in order
	busy  bool                  // a goroutine is writing
	wg    sync.WaitGroup
}

func newQueueWriter(ctx context.Context, write func(context.Context, queueWrite) error) *queueWriter {
	return &queueWriter{ctx: ctx, log: klog.FromContext(ctx), write: write, next: map[string]queueWrite{}}
}

// hand queues w for writing and returns at once.
func (q *queueWriter) hand(w queueWrite) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.next[w.q.Name]; !ok {
		q.order = append(q.order, w.q.Name)
	}
	q.next[w.q.Name] = w
	if !q.busy {
		q.busy = true
		q.wg.Go(q.run)
	}
}

// run writes what was handed until nothing is left or ctx ends.
func (q *queueWriter) run() {
	for {
		q.mu.Lock()
		if len(q.order) == 0 || q.ctx.Err() != nil {
			clear(q.next)
			q.order, q.busy = q.order[:0], false
			q.mu.Unlock()
			return
		}
		name := q.order[0]
		q.order = q.order[1:]
		w := q.next[name]
		delete(q.next, name)
		q.mu.Unlock()
		if err := q.write(q.ctx, w); err != nil && q.ctx.Err() == nil {
			q.log.Error(err, "writing a queue's status failed; a later cycle writes it again", "queue", name)
		}
	}
}

// wait waits for the write in flight (the end of a term: ctx has ended,
// so nothing more starts).
func (q *queueWriter) wait() { q.wg.Wait() }

// classGPUs keeps the GPU classes of a usage map (not the engine's "" key
// for all GPUs) in the API's form; nil when empty.
// queueCountsEvery bounds how often a leader rewrites a queue's status
// when only its counts (pending and active jobs, GPUs used and borrowed)
// changed. Every write of a queue record changes its revision, which every
// submission to the queue guards on (hub/jobs: the queue must not be
// marked for deletion meanwhile), and wakes every watcher of queues; under
// a steady intake the counts change every cycle, and the status was
// rewritten tens of times a second, each write failing the guard of the
// submissions in flight (about 4% of 20,000 single submissions had to be
// stored again). A change of conditions is written at once.
const queueCountsEvery = time.Second

// countsLater reports whether the queue's new status differs from its
// stored one only in counts and this leadership wrote the queue's status
// less than queueCountsEvery ago; it then asks for a cycle when that time
// is up, so the counts are written then. A scheduler that does not lead
// (a single cycle, tests) writes every change.
func (s *Scheduler) countsLater(q *v1alpha1.Queue, st v1alpha1.QueueStatus) bool {
	if s.queueWritten == nil || s.pokeAt == nil {
		return false
	}
	last, ok := s.queueWritten[q.Name]
	if !ok || queues.StatusEqual(q.Status, st) {
		return false
	}
	counts := q.Status
	counts.PendingJobs, counts.ActiveJobs, counts.UsedGPUs, counts.BorrowedGPUs = st.PendingJobs, st.ActiveJobs, st.UsedGPUs, st.BorrowedGPUs
	if !queues.StatusEqual(counts, st) { // the conditions changed too
		return false
	}
	wait := queueCountsEvery - time.Since(last)
	if wait <= 0 {
		return false
	}
	s.pokeAt(wait)
	return true
}

func classGPUs(m map[string]int) map[string]int32 {
	var out map[string]int32
	for k, g := range m {
		if k == "" || g == 0 {
			continue
		}
		if out == nil {
			out = map[string]int32{}
		}
		out[k] = int32(g)
	}
	return out
}
