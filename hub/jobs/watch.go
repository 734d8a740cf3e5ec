// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// Event is one change to a job; Err is set (and the stream ends) when the
// watch fails, e.g. with store.ErrCompacted for a revision too old.
type Event struct {
	Type     store.EventType
	Job      *v1alpha1.Job
	Revision int64
	// More says that more changes of Revision (one transaction's) follow
	// in the store's history, shown by this watch or not: a watch that
	// ends here resumes from Revision-1 to miss none of them. Never set on
	// a watch of one job (a transaction writes a job once).
	More bool
	Err  error
}

// Watch streams the changes to jobs (only to job name when it is not
// empty) after revision fromRevision (0: from now). Resume by passing the
// Revision of the last event seen, or the revision before it when that
// event has More set (the jobs written in one transaction, a batch
// submission, share a revision). The channel closes when ctx ends or after
// an error event.
func (s *Service) Watch(ctx context.Context, fromRevision int64, name string) <-chan Event {
	out := make(chan Event, 16)
	in := s.jobs.Watch(ctx, fromRevision)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Type != store.Error && name != "" && ev.Name != name {
				continue
			}
			e := Event{Type: ev.Type, Revision: ev.Revision, More: ev.More && name == "", Err: ev.Err}
			if ev.Object != nil {
				e.Job = withRevision(ev.Object, ev.Revision)
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
