// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
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
// changed since it was read is left for the next cycle.
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
		if s.countsLater(q, st) {
			continue
		}
		wrote, err := s.queueStatus.SetStatus(ctx, q, f.queueRevs[q.Name], st, guards...)
		switch {
		case errors.Is(err, store.ErrConflict):
		case err != nil:
			return fmt.Errorf("queue status: %w", err)
		case wrote:
			if s.queueWritten != nil {
				s.queueWritten[q.Name] = time.Now()
			}
			klog.FromContext(ctx).V(2).Info("queue status", "queue", q.Name, "pending", st.PendingJobs,
				"active", st.ActiveJobs, "gpus", st.UsedGPUs, "borrowed", st.BorrowedGPUs)
		}
	}
	return nil
}

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
