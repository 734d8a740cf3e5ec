// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// DefaultWorkers is Config.Workers' default.
const DefaultWorkers = 8

// jobQueue is the leadership's queue of jobs to reconcile: a client-go
// workqueue keyed by job name, so a job changed many times while it waits is
// reconciled once, and never by two workers at once (the queue hands a key
// out again only after Done). A failed reconcile is retried with a per-job
// backoff.
type jobQueue struct {
	q workqueue.TypedRateLimitingInterface[string]
}

func newJobQueue(maxBackoff time.Duration) *jobQueue {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](20*time.Millisecond, maxBackoff)
	return &jobQueue{q: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{})}
}

// add queues job ("" is ignored).
func (jq *jobQueue) add(job string) {
	if job != "" {
		jq.q.Add(job)
		queueDepth.Set(float64(jq.q.Len()))
	}
}

// work reconciles queued jobs until the queue shuts down.
func (d *Dispatcher) work(ctx context.Context, jq *jobQueue) {
	for {
		job, quit := jq.q.Get()
		if quit {
			return
		}
		queueDepth.Set(float64(jq.q.Len()))
		busyWorkers.Inc()
		err := d.reconcileJob(ctx, job)
		busyWorkers.Dec()
		switch {
		case ctx.Err() != nil:
			jq.q.Forget(job)
		case err != nil && !errors.Is(err, store.ErrConflict):
			reconciles.WithLabelValues("error").Inc()
			klog.FromContext(ctx).Error(err, "dispatch reconcile failed", "job", job)
			jq.q.AddRateLimited(job)
		case err != nil: // a concurrent write: read again at once
			reconciles.WithLabelValues("conflict").Inc()
			jq.q.Add(job)
		default:
			reconciles.WithLabelValues("ok").Inc()
			jq.q.Forget(job)
		}
		jq.q.Done(job)
	}
}

// reconcileJob reads one job's reservation and cached members and
// reconciles it, with the clusters of the last sweep.
func (d *Dispatcher) reconcileJob(ctx context.Context, job string) error {
	s, err := d.scopeOf(ctx, job)
	if err != nil || s == nil {
		d.setWake(job, time.Time{})
		if s == nil && err == nil { // nothing left of the job here
			d.memberWrites.Delete(job)
			d.sliceWrites.Delete(job)
			d.admit.done(job, 0, false)
			return d.forget(ctx, job)
		}
		return err
	}
	s.drains, s.lost, s.heard = d.view.get()
	err = d.reconcile(ctx, s)
	d.setWake(job, s.wake)
	return err
}

// forget drops a job that has neither a reservation nor members from the
// dependency copies (the sweep does too, but only every Config.Resync).
// Its rendezvous objects went with its teardown (tearDown).
func (d *Dispatcher) forget(ctx context.Context, job string) error {
	return d.sweepCopies(ctx, func(j string) bool { return j != job })
}

// scopeOf reads what a pass of one job starts from: its reservation and
// its cached members; nil when it has neither (nothing to do).
func (d *Dispatcher) scopeOf(ctx context.Context, job string) (*scope, error) {
	s := &scope{name: job}
	if names := d.resNames.Load(); names != nil && !names.mayHave(job) {
		pods, err := d.pods.ofJob(job)
		if err != nil || len(pods) == 0 {
			return nil, err // no reservation as of the watch, which queues the job again when one comes
		}
	}
	res, rev, err := d.ledger.Reservations().Get(ctx, job)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		s.res, s.resRev = res, rev
	}
	if s.pods, err = d.pods.ofJob(job); err != nil {
		return nil, err
	}
	if s.res == nil && len(s.pods) == 0 {
		return nil, nil
	}
	return s, nil
}

// clusterView is the clusters as the last sweep read them (readClusters),
// shared by the workers between sweeps.
type clusterView struct {
	mu    sync.RWMutex
	dr    drains
	lost  lostClusters
	heard heard
}

func (v *clusterView) set(dr drains, lost lostClusters, h heard) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.dr, v.lost, v.heard = dr, lost, h
}

// get returns the view's maps; they are replaced, never modified.
func (v *clusterView) get() (drains, lostClusters, heard) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.dr, v.lost, v.heard
}

// wakes keeps each job's pending deadline (wakeTimer), so Run's loop arms
// one timer at the earliest. A min-heap orders them; an entry whose job has
// since got another deadline (or none) is stale and skipped, so setting a
// deadline costs O(log n) however many jobs wait on one.
type wakes struct {
	mu sync.Mutex
	at map[string]time.Time
	h  wakeHeap
	// earlier is signalled when a job's deadline is earlier than any before.
	earlier chan struct{}
}

// wakeEntry is one deadline pushed on the heap.
type wakeEntry struct {
	job string
	at  time.Time
}

// wakeHeap is a container/heap of deadlines, earliest first.
type wakeHeap []wakeEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// live says whether e is its job's current deadline.
func (w *wakes) live(e wakeEntry) bool {
	t, ok := w.at[e.job]
	return ok && t.Equal(e.at)
}

// top drops stale entries off the heap and returns the earliest live one.
func (w *wakes) top() (wakeEntry, bool) {
	for len(w.h) > 0 {
		if e := w.h[0]; w.live(e) {
			return e, true
		}
		heap.Pop(&w.h)
	}
	return wakeEntry{}, false
}

// compact rebuilds the heap from the live deadlines once stale entries
// outnumber them, so that it stays O(jobs waiting).
func (w *wakes) compact() {
	if len(w.h) <= 2*len(w.at)+64 {
		return
	}
	w.h = w.h[:0]
	for job, t := range w.at {
		w.h = append(w.h, wakeEntry{job: job, at: t})
	}
	heap.Init(&w.h)
}

// setWake records job's pending deadline (zero: none) and signals the loop
// when it is the earliest.
func (d *Dispatcher) setWake(job string, at time.Time) {
	w := &d.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	if at.IsZero() {
		delete(w.at, job)
		return
	}
	if w.at == nil { // Pass driven by hand: Wake reads its own
		return
	}
	top, ok := w.top()
	first := !ok || at.Before(top.at)
	if t, had := w.at[job]; had && t.Equal(at) {
		return // already pending at that time
	}
	w.at[job] = at
	heap.Push(&w.h, wakeEntry{job: job, at: at})
	w.compact()
	if first && w.earlier != nil {
		select {
		case w.earlier <- struct{}{}:
		default:
		}
	}
}

// due removes and returns the jobs whose deadline is not after now.
func (d *Dispatcher) due(now time.Time) []string {
	w := &d.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for {
		e, ok := w.top()
		if !ok || e.at.After(now) {
			return out
		}
		heap.Pop(&w.h)
		delete(w.at, e.job)
		out = append(out, e.job)
	}
}

// resetWakes forgets the deadlines of an earlier leadership and returns
// the channel setWake signals an earlier deadline on, and a func that
// forgets them when this leadership ends.
func (d *Dispatcher) resetWakes() (<-chan struct{}, func()) {
	w := &d.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at, w.h, w.earlier = map[string]time.Time{}, nil, make(chan struct{}, 1)
	return w.earlier, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.at, w.h, w.earlier = nil, nil, nil
	}
}

// coalescing says whether Lead runs (its wakes are kept): only then are
// member phase writes spaced (deferMembers).
func (d *Dispatcher) coalescing() bool {
	d.wakes.mu.Lock()
	defer d.wakes.mu.Unlock()
	return d.wakes.at != nil
}

// earliest is the earliest pending deadline (zero: none).
func (d *Dispatcher) earliest() time.Time {
	w := &d.wakes
	w.mu.Lock()
	defer w.mu.Unlock()
	e, _ := w.top()
	return e.at
}
