// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// wholeJobs returns the jobs of items as stored, whole: the cache keeps
// them without their pod templates (jobcodec.go), and a status write
// stores the whole job. They are read at the revision the cycle's snapshot
// took the jobs at (one transaction for up to 128, no quorum round), so
// each is the version the cycle decided on; the items keep their
// revisions, which the writes guard on. Past the store's compaction they
// are read as they are now, and a job changed since fails its guard. A job
// no longer stored fails with store.ErrConflict, as its write would.
func (s *Scheduler) wholeJobs(ctx context.Context, f *fleet, items []store.Item[*v1alpha1.Job]) ([]store.Item[*v1alpha1.Job], error) {
	return s.wholeJobsAt(ctx, f.revisions[s.jobs.Kind()], items)
}

// wholeJobsAt is wholeJobs for a snapshot that took the jobs at rev.
func (s *Scheduler) wholeJobsAt(ctx context.Context, rev int64, items []store.Item[*v1alpha1.Job]) ([]store.Item[*v1alpha1.Job], error) {
	names := make([]string, len(items))
	for i := range items {
		names[i] = items[i].Name
	}
	read, err := s.jobs.GetAt(ctx, names, rev)
	if errors.Is(err, store.ErrCompacted) {
		read, err = s.jobs.GetAt(ctx, names, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("read %d jobs whole: %w", len(names), err)
	}
	byName := make(map[string]*v1alpha1.Job, len(read))
	for _, it := range read {
		byName[it.Name] = it.Object
	}
	out := make([]store.Item[*v1alpha1.Job], len(items))
	for i, it := range items {
		j := byName[it.Name]
		if j == nil {
			return nil, fmt.Errorf("job %q no longer stored: %w", it.Name, store.ErrConflict)
		}
		out[i] = store.Item[*v1alpha1.Job]{Name: it.Name, Object: j, Revision: it.Revision}
	}
	return out, nil
}
