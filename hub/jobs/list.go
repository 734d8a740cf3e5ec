// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// Page sizes of List.
const (
	// DefaultListLimit is the page size when the caller asks for none.
	DefaultListLimit = 500
	// MaxListLimit caps the page size.
	MaxListLimit = 5000
	// scanBatch is how many stored jobs a filtered List reads at a time.
	scanBatch = 1000
)

// ListOptions selects and pages jobs. Empty filters match everything.
type ListOptions struct {
	// Owner is the submitting user (status.owner).
	Queue, Cluster, Owner string
	Phase                 v1alpha1.JobPhase
	// Service keeps the replicas of one inference service (the label
	// v1alpha1.LabelInferenceService), Replicas those of any: for
	// hub/inference, which must not read a queue's every job to find
	// them.
	Service  string
	Replicas bool
	// Limit is the page size (DefaultListLimit when 0, at most MaxListLimit).
	Limit int64
	// Continue is the token of the previous page.
	Continue string
}

// ListResult is a page of jobs.
type ListResult struct {
	Items []*v1alpha1.Job
	// Continue fetches the next page; empty on the last one.
	Continue string
	// Revision the list was read at; Watch from it misses nothing.
	Revision int64
}

// cursor is List's continue token: the revision every page reports, the
// last name the previous page went through, and where the next page is
// read.
type cursor struct {
	// Rev is the first page's revision, which every page reports.
	Rev int64 `json:"r"`
	// Batch is how many stored jobs a scan reads at a time.
	Batch int64 `json:"b"`
	// After is the last name the previous page went through (returned,
	// or passed over by the filter); the next page starts after it.
	After string `json:"a,omitempty"`
	// Latest: a scan reads the next pages at the newest revision, as a
	// compaction removed Rev (list.go, List).
	Latest bool `json:"n,omitempty"`
	// Index: a page of the list index (listindexed.go).
	Index bool `json:"i,omitempty"`
	// Store and Skip were the scan's position in tokens of hubs before
	// 2026-12-05; such a token is refused (list again).
	Store string `json:"c,omitempty"`
	Skip  int    `json:"s,omitempty"`
}

// List returns a page of jobs matching opts, sorted by name. An unfiltered
// list (or a filtered one the list index cannot serve yet) scans the
// store: every page is read at the first page's revision while etcd keeps
// it. A list that outlives the compaction retention (a compaction removes
// that revision between two pages) goes on at the newest revision instead
// of failing: names are unique and pages follow them in order, so no job
// is listed twice or left out that existed throughout, a job changed since
// shows its newer state, and one created or deleted since shows or not by
// where its name falls. Every page reports the first page's revision; a
// Watch from it then gets OutOfRange, as for any compacted revision.
func (s *Service) List(ctx context.Context, opts ListOptions) (ListResult, error) {
	if opts.Phase != "" && !opts.Phase.Valid() {
		return ListResult{}, v1alpha1.NewInvalidError("job list", "", field.ErrorList{
			field.NotSupported(field.NewPath("phase"), opts.Phase, v1alpha1.JobPhases)})
	}
	limit := min(max(opts.Limit, 0), MaxListLimit)
	if limit == 0 {
		limit = DefaultListLimit
	}
	cur := cursor{Batch: max(limit, scanBatch)}
	if !opts.filtered() {
		cur.Batch = limit
	}
	if opts.Continue != "" {
		var err error
		if cur, err = decodeCursor(opts.Continue); err != nil {
			return ListResult{}, err
		}
		if cur.Index {
			if s.listIndex == nil || !opts.filtered() {
				return ListResult{}, fmt.Errorf("%w: job list continue token of an indexed list", store.ErrInvalidContinue)
			}
			return s.listIndexed(ctx, opts, limit, &cur)
		}
	} else if opts.filtered() && s.listIndex != nil {
		out, err := s.listIndexed(ctx, opts, limit, nil)
		if !notFresh(err) {
			return out, err
		}
	}
	return s.scan(ctx, opts, limit, cur)
}

// scan serves a page of List by reading the store in batches from cur.
func (s *Service) scan(ctx context.Context, opts ListOptions, limit int64, cur cursor) (ListResult, error) {
	var out ListResult
	for {
		rev := cur.Rev
		if cur.Latest {
			rev = 0
		}
		page, err := s.index.List(ctx, store.ListOptions{Limit: cur.Batch, After: cur.After, Revision: rev})
		if errors.Is(err, store.ErrCompacted) && rev > 0 {
			cur.Latest = true // the first page's revision is gone: go on at the newest
			listsPastCompaction.Inc()
			continue
		}
		if err != nil {
			return ListResult{}, err
		}
		if cur.Rev == 0 {
			cur.Rev = page.Revision
		}
		out.Revision = cur.Rev
		for _, it := range page.Items {
			if !opts.match(&it.Object.idx) {
				cur.After = it.Name
				continue
			}
			if int64(len(out.Items)) == limit {
				out.Continue = encodeCursor(cur)
				return out, nil
			}
			j, err := it.Object.job()
			if err != nil {
				return ListResult{}, fmt.Errorf("job %q: %w", it.Name, err)
			}
			out.Items = append(out.Items, withRevision(j, it.Revision))
			cur.After = it.Name
		}
		if page.Continue == "" {
			return out, nil
		}
		if int64(len(out.Items)) == limit {
			out.Continue = encodeCursor(cur)
			return out, nil
		}
	}
}

func (o ListOptions) filtered() bool {
	return o.Queue != "" || o.Phase != "" || o.Cluster != "" || o.Owner != "" || o.Service != "" || o.Replicas
}

func (o ListOptions) match(x *jobIndex) bool {
	if o.Queue != "" && x.Spec.Queue != o.Queue {
		return false
	}
	if o.Owner != "" && x.Status.Owner != o.Owner {
		return false
	}
	if o.Phase != "" && x.Status.Phase != o.Phase {
		return false
	}
	if svc := x.service(); (o.Service != "" && svc != o.Service) || (o.Replicas && svc == "") {
		return false
	}
	return o.Cluster == "" || x.hasCluster(o.Cluster)
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // a struct of strings and ints always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	switch {
	case err != nil:
	case c.Store != "" || c.Skip != 0:
		err = errors.New("a token of an older hub; list again from the first page")
	case c.Rev <= 0 || c.Batch <= 0:
		err = fmt.Errorf("revision %d, batch %d", c.Rev, c.Batch)
	}
	if err != nil {
		return c, fmt.Errorf("%w: job list continue token: %v", store.ErrInvalidContinue, err)
	}
	return c, nil
}

// ActiveJobs counts the queue's jobs that are not terminal (for
// hub/queues, which refuses to delete a queue in use).
func (s *Service) ActiveJobs(ctx context.Context, queue string) (int, error) {
	if s.listIndex != nil {
		n, err := s.activeJobsIndexed(ctx, queue)
		if !notFresh(err) {
			return n, err
		}
	}
	n := 0
	opts := store.ListOptions{Limit: scanBatch}
	for {
		page, err := s.index.List(ctx, opts)
		if err != nil {
			return 0, err
		}
		for _, it := range page.Items {
			if x := &it.Object.idx; x.Spec.Queue == queue && !x.Status.Phase.Terminal() {
				n++
			}
		}
		if page.Continue == "" {
			return n, nil
		}
		opts.Continue = page.Continue
	}
}
