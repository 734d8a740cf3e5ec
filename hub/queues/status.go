// SPDX-License-Identifier: Apache-2.0

package queues

import (
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// StatusWriter writes Queue status on behalf of the scheduler, which
// computes it; this package stays the only writer of Queue records.
type StatusWriter struct {
	store  *store.Store
	queues *store.Collection[*v1alpha1.Queue]
}

// NewStatusWriter returns the status writer of the queues in st.
func NewStatusWriter(st *store.Store) *StatusWriter {
	return &StatusWriter{store: st, queues: NewCollection(st)}
}

// SetStatus stores status on q, the queue as read at revision rev, unless
// it means the same as q's current status (condition times aside). The
// write is guarded by rev and by guards (the caller's leadership): it
// returns store.ErrConflict when the queue or a guard changed, and reports
// whether it wrote. Spec, metadata and generation are left as read.
func (w *StatusWriter) SetStatus(ctx context.Context, q *v1alpha1.Queue, rev int64, status v1alpha1.QueueStatus,
	guards ...store.Cond) (bool, error) {
	if StatusEqual(q.Status, status) {
		return false, nil
	}
	next := *q
	next.ResourceVersion = ""
	next.Status = *status.DeepCopy()
	_, err := w.store.Txn(ctx).If(append(guards, w.queues.RevIs(q.Name, rev))...).
		Then(w.queues.PutOp(q.Name, &next)).Commit()
	if err != nil {
		return false, fmt.Errorf("write status of queue %q: %w", q.Name, err)
	}
	return true, nil
}

// StatusEqual reports whether two queue statuses mean the same: equal
// counts and GPU maps (nil and empty alike) and conditions equal but for
// their transition times.
func StatusEqual(a, b v1alpha1.QueueStatus) bool {
	return a.PendingJobs == b.PendingJobs && a.ActiveJobs == b.ActiveJobs &&
		maps.Equal(a.UsedGPUs, b.UsedGPUs) && maps.Equal(a.BorrowedGPUs, b.BorrowedGPUs) &&
		slices.EqualFunc(a.Conditions, b.Conditions, func(x, y metav1.Condition) bool {
			return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason &&
				x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
		})
}
