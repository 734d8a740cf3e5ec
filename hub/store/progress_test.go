// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// TestWatchProgressMarksTheRevision: after a request, a Progress event
// comes after every change up to the store's revision, in order.
func TestWatchProgressMarksTheRevision(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "progress")
	start := must[int64](t)(shared.Revision(ctx))
	events, request := c.Reader().WatchProgress(ctx, start)
	rev := must[int64](t)(c.Create(ctx, "a", testObj{Spec: "1"}))
	sawA := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	if err := request(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-events:
			switch ev.Type {
			case store.Added:
				sawA = ev.Name == "a"
			case store.Progress:
				if ev.Revision >= rev {
					if !sawA {
						t.Fatalf("progress at %d before the change at %d", ev.Revision, rev)
					}
					return
				}
			default:
				t.Fatalf("event %+v", ev)
			}
		case <-tick.C:
			if err := request(); err != nil { // etcd drops a request made while the watch catches up
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("no progress event")
		}
	}
}

// TestGetAtReadsOneRevision: values as of the revision given, absent
// names left out, in the order asked.
func TestGetAtReadsOneRevision(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "getat")
	must[int64](t)(c.Create(ctx, "a", testObj{Spec: "a1"}))
	rev := must[int64](t)(c.Create(ctx, "b", testObj{Spec: "b1"}))
	if _, err := c.Update(ctx, "a", testObj{Spec: "a2"}, 0); err != nil {
		t.Fatal(err)
	}
	got, err := c.Reader().GetAt(ctx, []string{"b", "missing", "a"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "b" || got[0].Object.Spec != "b1" || got[1].Name != "a" || got[1].Object.Spec != "a1" {
		t.Fatalf("GetAt at %d: %+v", rev, got)
	}
}
