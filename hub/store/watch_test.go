// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// next returns the next event or fails after a timeout.
func next(t *testing.T, ch <-chan store.WatchEvent[testObj]) store.WatchEvent[testObj] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return store.WatchEvent[testObj]{}
}

func TestWatchResumesFromRevision(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "watch")
	must[int64](t)(c.Create(ctx, "a", testObj{Spec: "a1"}))
	must[int64](t)(c.Create(ctx, "b", testObj{Spec: "b1"}))
	listed := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{}))

	revA := must[int64](t)(c.Update(ctx, "a", testObj{Spec: "a2"}, 0))
	if err := c.Delete(ctx, "b", 0); err != nil {
		t.Fatal(err)
	}
	revC := must[int64](t)(c.Create(ctx, "c", testObj{Spec: "c1"}))
	must[int64](t)(collection(t, "noise").Create(ctx, "a", testObj{}))

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := c.Watch(wctx, listed.Revision)
	want := []struct {
		typ  store.EventType
		name string
		spec string
	}{{store.Modified, "a", "a2"}, {store.Deleted, "b", "b1"}, {store.Added, "c", "c1"}}
	var last int64
	for _, w := range want {
		ev := next(t, ch)
		if ev.Type != w.typ || ev.Name != w.name || ev.Object.Spec != w.spec || ev.Err != nil {
			t.Fatalf("event %+v, want %s %s %s", ev, w.typ, w.name, w.spec)
		}
		if ev.Revision <= last {
			t.Fatalf("revision %d not after %d", ev.Revision, last)
		}
		last = ev.Revision
	}
	if last != revC {
		t.Fatalf("last revision %d, want %d", last, revC)
	}

	// Resuming from the first event's revision replays only what followed it.
	ch2 := c.Watch(wctx, revA)
	if ev := next(t, ch2); ev.Type != store.Deleted || ev.Name != "b" {
		t.Fatalf("resumed watch: first event %+v, want Deleted b", ev)
	}
	// A live change reaches both watches.
	must[int64](t)(c.Update(ctx, "c", testObj{Spec: "c2"}, revC))
	next(t, ch2) // Added c
	for _, w := range []<-chan store.WatchEvent[testObj]{ch, ch2} {
		if ev := next(t, w); ev.Type != store.Modified || ev.Object.Spec != "c2" {
			t.Fatalf("live event %+v, want Modified c c2", ev)
		}
	}
	cancel()
	for range ch {
	}
}

func TestWatchReportsCompaction(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "compact")
	for i := range 5 {
		must[int64](t)(c.Create(ctx, fmt.Sprint(i), testObj{}))
	}
	page := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{Limit: 2}))
	for i := range 5 {
		must[int64](t)(c.Update(ctx, fmt.Sprint(i), testObj{Spec: "later"}, 0))
	}
	rev := must[int64](t)(shared.Revision(ctx))
	if err := shared.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	ch := c.Watch(ctx, page.Revision)
	ev := next(t, ch)
	if ev.Type != store.Error || !errors.Is(ev.Err, store.ErrCompacted) {
		t.Fatalf("event %+v, want Error with ErrCompacted", ev)
	}
	select {
	case extra, ok := <-ch:
		if ok {
			t.Fatalf("event after the error: %+v", extra)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("channel not closed after the error event")
	}
	if _, err := c.List(ctx, store.ListOptions{Limit: 2, Continue: page.Continue}); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("continued list after compaction: %v, want ErrCompacted", err)
	}
	// Relist and watch from the new revision: works again.
	fresh := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{}))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch = c.Watch(wctx, fresh.Revision)
	must[int64](t)(c.Create(ctx, "after", testObj{}))
	if ev := next(t, ch); ev.Type != store.Added || ev.Name != "after" {
		t.Fatalf("event after relist %+v", ev)
	}
}

// TestWatchFromNowSeesTheNextWrite: a watch from now (revision 0) starts
// at the revision of its call, so a write made as soon as Watch returns is
// delivered. (It used to read that revision in its goroutine, after the
// call returned, and so could start after such a write and miss it: the
// API's job watch, which answers its headers once Watch returns, lost the
// event of a submission made right after them, CI, session 21.)
func TestWatchFromNowSeesTheNextWrite(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "fromnow")
	for i := range 20 {
		wctx, cancel := context.WithCancel(ctx)
		ch := c.Watch(wctx, 0)
		name := fmt.Sprintf("j%02d", i)
		rev := must[int64](t)(c.Create(ctx, name, testObj{Spec: "x"}))
		select {
		case ev := <-ch:
			if ev.Type != store.Added || ev.Name != name || ev.Revision != rev {
				t.Fatalf("watch %d: first event %+v, want Added %s at %d", i, ev, name, rev)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("watch %d from now missed the write made right after it returned (revision %d)", i, rev)
		}
		cancel()
		for range ch {
		}
	}
}

// TestWatchMarksTheEventsOfATransaction: the writes of one Txn share a
// revision and are sent one by one; every one but the last says more of
// its revision follow (More), live and from history alike, so that a
// cache does not call itself current to the revision after the first.
func TestWatchMarksTheEventsOfATransaction(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "txn")
	other := collection(t, "txnother")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := must[int64](t)(shared.Revision(ctx))
	live := c.Watch(wctx, 0)
	var ops []store.Op
	for i := range 5 {
		ops = append(ops, c.PutOp(fmt.Sprintf("m%d", i), testObj{Spec: "x"}))
	}
	ops = append(ops, other.PutOp("elsewhere", testObj{})) // same revision, another collection: not in this watch
	rev := must[int64](t)(shared.Txn(ctx).Then(ops...).Commit())
	single := must[int64](t)(c.Create(ctx, "alone", testObj{}))
	history := c.Watch(wctx, from)
	for name, ch := range map[string]<-chan store.WatchEvent[testObj]{"live": live, "history": history} {
		for i := range 5 {
			ev := next(t, ch)
			if ev.Revision != rev || ev.Name != fmt.Sprintf("m%d", i) || ev.More != (i < 4) {
				t.Fatalf("%s: event %d: %s at %d, more %v; want m%d at %d, more %v", name, i, ev.Name, ev.Revision, ev.More, i, rev, i < 4)
			}
		}
		if ev := next(t, ch); ev.Revision != single || ev.More {
			t.Fatalf("%s: the write alone: %s at %d, more %v; want at %d, no more", name, ev.Name, ev.Revision, ev.More, single)
		}
	}
}
