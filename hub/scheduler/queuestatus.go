// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
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
		wrote, err := s.queueStatus.SetStatus(ctx, q, f.queueRevs[q.Name], st, guards...)
		switch {
		case errors.Is(err, store.ErrConflict):
		case err != nil:
			return fmt.Errorf("queue status: %w", err)
		case wrote:
			klog.FromContext(ctx).V(2).Info("queue status", "queue", q.Name, "pending", st.PendingJobs,
				"active", st.ActiveJobs, "gpus", st.UsedGPUs, "borrowed", st.BorrowedGPUs)
		}
	}
	return nil
}

// classGPUs keeps the GPU classes of a usage map (not the engine's "" key
// for all GPUs) in the API's form; nil when empty.
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
