// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// WithListIndex serves filtered lists and queue counts from ix (whose Run
// the caller runs) instead of scanning the store.
func WithListIndex(ix *ListIndex) Option { return func(s *Service) { s.listIndex = ix } }

// listIndexed serves a filtered page from the list index: the first page
// once the index holds every change the store had at the call (a
// consistent read), the next ones from the names after the last one
// returned. Each page's jobs are read from the store at the revision the
// index was at; every page reports the first page's revision, so a Watch
// from it misses nothing (it may replay changes a later page already
// shows). errNotFresh: the caller scans instead.
func (s *Service) listIndexed(ctx context.Context, opts ListOptions, limit int64, cur *cursor) (ListResult, error) {
	ix := s.listIndex
	if cur == nil {
		if err := ix.fresh(ctx); err != nil {
			return ListResult{}, err
		}
	} else if !ix.isSynced() {
		return ListResult{}, errs.Unavailable("job list index", errors.New("restarting; list again from the first page"))
	}
	after := ""
	if cur != nil {
		after = cur.After
	}
	names, more, rev := ix.query(opts, after, int(limit))
	items, err := s.raw.GetAt(ctx, names, rev)
	if err != nil {
		return ListResult{}, err
	}
	out := ListResult{Items: make([]*v1alpha1.Job, 0, len(items)), Revision: rev}
	if cur != nil {
		out.Revision = cur.Rev
	}
	for _, it := range items {
		j, err := it.Object.job()
		if err != nil {
			return ListResult{}, fmt.Errorf("job %q: %w", it.Name, err)
		}
		out.Items = append(out.Items, withRevision(j, it.Revision))
	}
	if more {
		out.Continue = encodeCursor(cursor{Rev: out.Revision, Batch: limit, Index: true, After: names[len(names)-1]})
	}
	return out, nil
}

// isSynced reports whether the index holds the jobs (it may lag).
func (ix *ListIndex) isSynced() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.synced
}

// activeJobsIndexed counts from the index once it is fresh.
func (s *Service) activeJobsIndexed(ctx context.Context, queue string) (int, error) {
	if err := s.listIndex.fresh(ctx); err != nil {
		return 0, err
	}
	return s.listIndex.activeJobs(queue), nil
}

// notFresh reports whether err asks for a scan instead of the index.
func notFresh(err error) bool { return errors.Is(err, errNotFresh) }
