// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestCacheListsAgainAfterCompaction: a cache whose watch must resume from
// a compacted revision lists again and so misses no change.
func TestCacheListsAgainAfterCompaction(t *testing.T) {
	e := hubtest.New(t)
	s := New(e.Store, Config{Clock: e.Clock})
	c := s.newCaches()
	if err := c.jobs.sync(e.Ctx); err != nil {
		t.Fatal(err)
	}
	listedAt := c.jobs.revision()
	e.Submit("after-list", 1, 8)
	e.Submit("after-list-2", 1, 8) // the compaction passes the watch's first revision
	rev, err := e.Store.Revision(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Compact(e.Ctx, rev); err != nil {
		t.Fatal(err)
	}
	// The watch from the list's revision cannot resume.
	fctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
	err = c.jobs.follow(fctx)
	cancel()
	if !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("follow from compacted revision %d: %v, want ErrCompacted", listedAt, err)
	}
	before := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs"))
	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); c.jobs.run(ctx, func() {}) }()
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.jobs.mu.RLock()
	_, ok := c.jobs.items["after-list"]
	_, active := c.active["after-list"]
	c.jobs.mu.RUnlock()
	if !ok || !active {
		t.Fatalf("the job submitted after the list is not cached (cached %v, active %v)", ok, active)
	}
	if got := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs")); got != before+1 {
		t.Fatalf("relists %v, want %v", got, before+1)
	}
	// It follows the watch again from the new list.
	e.Submit("after-relist", 1, 8)
	rev, _ = e.Store.Revision(e.Ctx)
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
}

// TestCacheRelistOnDemand: relist ends the running watch and the cache
// lists again, then keeps following.
func TestCacheRelistOnDemand(t *testing.T) {
	e := hubtest.New(t)
	c := New(e.Store, Config{Clock: e.Clock}).newCaches()
	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.jobs.run(ctx, func() { close(ready) }) }()
	<-ready
	before := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs"))
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(cacheRelists.WithLabelValues("jobs")) == before {
		c.jobs.relist() // the watch may not have started yet: ask again
		if time.Now().After(deadline) {
			t.Fatal("relist did not make the cache list again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.Submit("after-relist", 1, 8)
	rev, err := e.Store.Revision(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
}
