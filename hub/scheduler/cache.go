// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// watched is one kind kept in memory from a list and a watch of the store:
// each object is decoded once per change, not once per cycle. A watch that
// ends (compacted history, an undecodable value, a lost store) is followed
// by a fresh list, so the cache never misses a change; while it relists,
// rev stays where it was and a cycle that needs newer data waits for it.
type watched[T any] struct {
	r store.Reader[T]
	// index, when set, is told of every change under mu (old and new are
	// nil for an absent object), for a caller's secondary index.
	index func(name string, old, new *store.Item[T])
	// reset, when set, is called under mu before a relist replaces items.
	reset func()
	// poke, when set, is called after every applied change for which
	// matters (when set) is true, and after every list.
	poke func()
	// matters, when set, says whether a change (old or cur nil for an
	// absent object) can change a cycle's decision now; a batch of changes
	// none of which does pokes nobody, and the next cycle on the interval
	// sees them.
	matters func(old, cur *store.Item[T]) bool

	mu    sync.RWMutex
	items map[string]store.Item[T]
	// rev is the store revision the cache is current to: every change of
	// the kind up to rev is applied.
	rev int64
	// advanced is closed (and replaced) whenever rev advances.
	advanced chan struct{}
	// stopFollow ends the running watch, so that run lists again (relist).
	stopFollow context.CancelFunc
}

// relist makes the cache list its kind again now: for a cache that should
// have reached a revision and did not in time.
func (c *watched[T]) relist() {
	c.mu.RLock()
	stop := c.stopFollow
	c.mu.RUnlock()
	if stop != nil {
		stop()
	}
}

func newWatched[T any](r store.Reader[T]) *watched[T] {
	return &watched[T]{r: r, items: map[string]store.Item[T]{}, advanced: make(chan struct{})}
}

// sync lists the kind at one revision and replaces the items.
func (c *watched[T]) sync(ctx context.Context) error {
	var items []store.Item[T]
	opts := store.ListOptions{Limit: 1000}
	var rev int64
	for {
		res, err := c.r.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list %s: %w", c.r.Kind(), err)
		}
		items = append(items, res.Items...)
		rev = res.Revision
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	c.mu.Lock()
	if c.reset != nil {
		c.reset()
	}
	c.items = make(map[string]store.Item[T], len(items))
	for i := range items {
		c.items[items[i].Name] = items[i]
		if c.index != nil {
			c.index(items[i].Name, nil, &items[i])
		}
	}
	c.advance(rev)
	c.mu.Unlock()
	if c.poke != nil {
		c.poke()
	}
	return nil
}

// advance sets rev (under mu) and wakes the waiters.
func (c *watched[T]) advance(rev int64) {
	if rev <= c.rev {
		return
	}
	c.rev = rev
	close(c.advanced)
	c.advanced = make(chan struct{})
}

// run keeps the cache until ctx ends: a watch from the last list's
// revision, and a new list whenever the watch ends. ready is called once
// after the first list.
func (c *watched[T]) run(ctx context.Context, ready func()) {
	log := klog.FromContext(ctx).WithValues("kind", c.r.Kind())
	backoff := 100 * time.Millisecond
	first := true
	list := c.revision() == 0 // a cache already listed follows the watch from there
	for ctx.Err() == nil {
		if !list {
			list = true
		} else if err := c.sync(ctx); err != nil {
			if ctx.Err() == nil {
				log.Error(err, "scheduler cache: list failed; retrying", "in", backoff)
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if first {
			first = false
			ready()
		}
		err := c.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		cacheRelists.WithLabelValues(c.r.Kind()).Inc()
		log.V(1).Info("scheduler cache: watch ended; listing again", "err", err)
	}
}

// follow applies the watch's changes from the cache's revision until the
// watch ends, and returns why.
func (c *watched[T]) follow(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	from := c.rev
	c.stopFollow = cancel
	c.mu.Unlock()
	ch := c.r.Watch(ctx, from)
	for {
		var ev store.WatchEvent[T]
		var ok bool
		select {
		case <-ctx.Done():
			return fmt.Errorf("watch stopped: %w", ctx.Err())
		case ev, ok = <-ch:
		}
		if !ok {
			return errors.New("watch closed")
		}
		if ev.Type == store.Error {
			return ev.Err
		}
		// Apply what is already buffered with it under one lock, and at
		// least up to the last event of its revision: the events of one
		// transaction are sent one after the other (WatchEvent.More), and
		// a cache that advanced to a transaction's revision after part of
		// it let a cycle decide without the rest of its bookings.
		batch := []store.WatchEvent[T]{ev}
		for len(ch) > 0 || batch[len(batch)-1].More {
			var next store.WatchEvent[T]
			select {
			case <-ctx.Done():
				return fmt.Errorf("watch stopped: %w", ctx.Err())
			case next, ok = <-ch:
			}
			if !ok || next.Type == store.Error {
				c.apply(batch)
				if !ok {
					return errors.New("watch closed")
				}
				return next.Err
			}
			batch = append(batch, next)
		}
		c.apply(batch)
	}
}

// apply puts a batch of changes into the cache.
func (c *watched[T]) apply(batch []store.WatchEvent[T]) {
	matters := c.matters == nil
	c.mu.Lock()
	for _, ev := range batch {
		old, had := c.items[ev.Name]
		var oldp *store.Item[T]
		if had {
			oldp = &old
		}
		switch ev.Type {
		case store.Deleted:
			delete(c.items, ev.Name)
			if c.index != nil && had {
				c.index(ev.Name, oldp, nil)
			}
			matters = matters || c.matters(oldp, nil)
		default:
			it := store.Item[T]{Name: ev.Name, Object: ev.Object, Revision: ev.Revision}
			c.items[ev.Name] = it
			if c.index != nil {
				c.index(ev.Name, oldp, &it)
			}
			matters = matters || c.matters(oldp, &it)
		}
		if !ev.More {
			c.advance(ev.Revision) // the whole of its transaction is applied
		}
	}
	c.mu.Unlock()
	cacheEvents.WithLabelValues(c.r.Kind()).Add(float64(len(batch)))
	if c.poke != nil && matters {
		c.poke()
	}
}

// errCacheBehind says a cache did not reach a revision in time.
var errCacheBehind = errors.New("scheduler cache behind the store")

// waitFor waits until the cache is current to rev, at most timeout.
func (c *watched[T]) waitFor(ctx context.Context, rev int64, timeout time.Duration) error {
	var deadline <-chan time.Time
	for {
		c.mu.RLock()
		cur, ch := c.rev, c.advanced
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%w: %s at revision %d, not %d after %s", errCacheBehind, c.r.Kind(), cur, rev, timeout)
		}
	}
}

// kind is the kind the cache keeps.
func (c *watched[T]) kind() string { return c.r.Kind() }

// revision is the revision the cache is current to.
func (c *watched[T]) revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// newest is the cache's kind, for store.NewestRevisions: a snapshot waits
// for the cache to reach the newest revision stored (caches.snapshot), for
// the small kinds whose writes come from other owners (a cordon, a quota
// change).
func (c *watched[T]) newest() store.Newest { return c.r }
