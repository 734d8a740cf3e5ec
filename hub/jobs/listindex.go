// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// freshWait bounds how long a list waits for the index to catch up with
// the store before it scans instead; progressEvery is how often it asks
// the watch for a progress event meanwhile.
const (
	freshWait     = 2 * time.Second
	progressEvery = 100 * time.Millisecond
)

// errNotFresh: the index did not catch up with the store in time (or is
// not synced); the caller scans the store instead.
var errNotFresh = errors.New("job list index is not fresh")

// ListIndex is an in-memory index of every job's list and retention
// fields (queue, phase, owner, clusters, completion, TTL), fed by a watch
// of the jobs, with a set of names per queue, phase, owner and cluster. A
// filtered List picks the names of a page from it and reads only those
// jobs from the store, at the index's revision, instead of scanning every
// job; the retention sweeper finds expired jobs in it without decoding
// any. Every hub replica runs one (docs/retention.md).
type ListIndex struct {
	reader store.Reader[*indexed]
	revFn  func(context.Context) (int64, error)

	mu      sync.RWMutex
	synced  bool
	rev     int64 // every change up to rev is applied
	request func() error
	moved   chan struct{} // closed, and replaced, when rev advances
	entries map[string]*indexEntry
	// sets: the names per value of each filter field.
	byQueue, byPhase, byOwner, byCluster map[string]map[string]struct{}
	// byService: the replicas of each inference service; replicas: of any.
	byService map[string]map[string]struct{}
	replicas  map[string]struct{}
}

// indexEntry is one job's indexed fields.
type indexEntry struct {
	name, queue, owner string
	// service is the inference service the job is a replica of.
	service  string
	phase    v1alpha1.JobPhase
	clusters []string
	// finished is the completion time of a terminal job (its creation
	// time when it has none), zero before.
	finished time.Time
	ttl      *int32
	rev      int64
}

// NewListIndex returns the index of st's jobs; Run fills and follows it.
func NewListIndex(st *store.Store) *ListIndex {
	return &ListIndex{reader: newIndexReader(st), revFn: st.Revision, moved: make(chan struct{})}
}

// HasSynced reports whether the index holds a full list of the jobs and
// follows their changes; until then lists scan and retention waits.
func (ix *ListIndex) HasSynced() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.synced
}

// Run lists the jobs, then follows their changes until ctx ends, listing
// again when the watch falls behind the store's compaction.
func (ix *ListIndex) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("joblistindex")
	for ctx.Err() == nil {
		err := ix.follow(ctx)
		if ctx.Err() != nil {
			break
		}
		log.Error(err, "Job list index lost its watch; listing again")
		ix.mu.Lock()
		ix.synced = false
		ix.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// follow loads every job and applies the watch's events until it fails.
func (ix *ListIndex) follow(ctx context.Context) error {
	page, err := ix.reader.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	events, request := ix.reader.WatchProgress(ctx, page.Revision)
	ix.mu.Lock()
	ix.reset()
	for _, it := range page.Items {
		ix.put(it.Name, &it.Object.idx, it.Revision)
	}
	ix.request, ix.synced = request, true
	ix.advance(page.Revision)
	ix.mu.Unlock()
	for ev := range events {
		ix.mu.Lock()
		switch ev.Type {
		case store.Error:
			ix.mu.Unlock()
			return ev.Err
		case store.Deleted:
			ix.remove(ev.Name)
		case store.Added, store.Modified:
			ix.put(ev.Name, &ev.Object.idx, ev.Revision)
		}
		if !ev.More { // the rest of a transaction's jobs (a batch submission) follow
			ix.advance(ev.Revision)
		}
		ix.mu.Unlock()
	}
	return ctx.Err()
}

// reset empties the index (locked).
func (ix *ListIndex) reset() {
	ix.entries = map[string]*indexEntry{}
	ix.byQueue, ix.byPhase = map[string]map[string]struct{}{}, map[string]map[string]struct{}{}
	ix.byOwner, ix.byCluster = map[string]map[string]struct{}{}, map[string]map[string]struct{}{}
	ix.byService, ix.replicas = map[string]map[string]struct{}{}, map[string]struct{}{}
}

// advance records that every change up to rev is applied (locked).
func (ix *ListIndex) advance(rev int64) {
	if rev > ix.rev {
		ix.rev = rev
		close(ix.moved)
		ix.moved = make(chan struct{})
	}
}

// put indexes a job (locked).
func (ix *ListIndex) put(name string, x *jobIndex, rev int64) {
	ix.remove(name)
	e := &indexEntry{name: name, queue: x.Spec.Queue, owner: x.Status.Owner, phase: x.Status.Phase,
		service: x.service(), clusters: x.clusters(), ttl: x.Spec.TTLSecondsAfterFinished, rev: rev}
	if e.phase.Terminal() {
		switch {
		case x.Status.CompletionTime != nil:
			e.finished = x.Status.CompletionTime.Time
		case x.Metadata.CreationTimestamp != nil:
			e.finished = x.Metadata.CreationTimestamp.Time
		}
	}
	ix.entries[name] = e
	add(ix.byQueue, e.queue, name)
	add(ix.byPhase, string(e.phase), name)
	add(ix.byOwner, e.owner, name)
	for _, c := range e.clusters {
		add(ix.byCluster, c, name)
	}
	if e.service != "" {
		add(ix.byService, e.service, name)
		ix.replicas[name] = struct{}{}
	}
}

// remove drops a job from the index (locked).
func (ix *ListIndex) remove(name string) {
	e := ix.entries[name]
	if e == nil {
		return
	}
	delete(ix.entries, name)
	drop(ix.byQueue, e.queue, name)
	drop(ix.byPhase, string(e.phase), name)
	drop(ix.byOwner, e.owner, name)
	for _, c := range e.clusters {
		drop(ix.byCluster, c, name)
	}
	if e.service != "" {
		drop(ix.byService, e.service, name)
		delete(ix.replicas, name)
	}
}

func add(m map[string]map[string]struct{}, k, name string) {
	if m[k] == nil {
		m[k] = map[string]struct{}{}
	}
	m[k][name] = struct{}{}
}

func drop(m map[string]map[string]struct{}, k, name string) {
	delete(m[k], name)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// fresh waits until the index holds every change the store had when it
// was called (a consistent read, like a quorum read of the store), asking
// the watch for progress events meanwhile. It returns errNotFresh when the
// index is not synced or does not catch up within freshWait.
func (ix *ListIndex) fresh(ctx context.Context) error {
	want, err := ix.revFn(ctx)
	if err != nil {
		return err
	}
	deadline := time.NewTimer(freshWait)
	defer deadline.Stop()
	for {
		ix.mu.RLock()
		synced, rev, moved, request := ix.synced, ix.rev, ix.moved, ix.request
		ix.mu.RUnlock()
		if !synced {
			return errNotFresh
		}
		if rev >= want {
			return nil
		}
		if err := request(); err != nil {
			return fmt.Errorf("%w: %w", errNotFresh, err)
		}
		retry := time.NewTimer(progressEvery)
		select {
		case <-moved:
		case <-retry.C:
		case <-deadline.C:
			retry.Stop()
			return errNotFresh
		case <-ctx.Done():
			retry.Stop()
			return ctx.Err()
		}
		retry.Stop()
	}
}

// query returns, sorted, the names of the jobs matching opts after the
// name after, at most limit of them and whether more follow, and the
// revision the index was at.
func (ix *ListIndex) query(opts ListOptions, after string, limit int) (names []string, more bool, rev int64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for name := range ix.candidates(opts) {
		if name > after && ix.entries[name].match(opts) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) > limit {
		return names[:limit], true, ix.rev
	}
	return names, false, ix.rev
}

// candidates is the smallest name set of opts' filters (locked).
func (ix *ListIndex) candidates(opts ListOptions) map[string]struct{} {
	var best map[string]struct{}
	first := true
	pick := func(m map[string]map[string]struct{}, k string) {
		if s := m[k]; first || len(s) < len(best) {
			best, first = s, false
		}
	}
	if opts.Queue != "" {
		pick(ix.byQueue, opts.Queue)
	}
	if opts.Phase != "" {
		pick(ix.byPhase, string(opts.Phase))
	}
	if opts.Owner != "" {
		pick(ix.byOwner, opts.Owner)
	}
	if opts.Cluster != "" {
		pick(ix.byCluster, opts.Cluster)
	}
	if opts.Service != "" {
		pick(ix.byService, opts.Service)
	}
	if opts.Replicas && (first || len(ix.replicas) < len(best)) {
		best, first = ix.replicas, false
	}
	return best
}

// match reports whether the entry passes every filter of opts.
func (e *indexEntry) match(o ListOptions) bool {
	return (o.Queue == "" || e.queue == o.Queue) && (o.Phase == "" || e.phase == o.Phase) &&
		(o.Owner == "" || e.owner == o.Owner) && (o.Cluster == "" || slices.Contains(e.clusters, o.Cluster)) &&
		(o.Service == "" || e.service == o.Service) && (!o.Replicas || e.service != "")
}

// activeJobs counts the queue's jobs that are not terminal.
func (ix *ListIndex) activeJobs(queue string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for name := range ix.byQueue[queue] {
		if !ix.entries[name].phase.Terminal() {
			n++
		}
	}
	return n
}
