// SPDX-License-Identifier: Apache-2.0

package queues

import (
	"context"
	"errors"
	"strconv"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of Queue records.
const Kind = "queues"

// NewCollection returns the typed store collection of Queues. Packages other
// than queues only read it (hub/jobs guards submissions on a queue's revision).
func NewCollection(s *store.Store) *store.Collection[*v1alpha1.Queue] {
	return store.NewCollection(s, Kind, store.JSONCodec[*v1alpha1.Queue]())
}

// withRevision sets metadata.resourceVersion to the store revision for callers.
func withRevision(q *v1alpha1.Queue, rev int64) *v1alpha1.Queue {
	q.ResourceVersion = strconv.FormatInt(rev, 10)
	return q
}

// notFound gives store.ErrNotFound a message that says what to do.
func notFound(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return errs.Of(store.ErrNotFound, "queue %q not found; `shoal queue list` shows the queues", name)
	}
	return err
}

// listAll reads every queue, page by page, at one revision.
func listAll(ctx context.Context, c *store.Collection[*v1alpha1.Queue]) ([]store.Item[*v1alpha1.Queue], error) {
	var out []store.Item[*v1alpha1.Queue]
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := c.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}
