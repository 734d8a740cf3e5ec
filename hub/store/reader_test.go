// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"errors"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

// TestReaderSeesTheOwnersWrites: a Reader opened by another package and the
// one the owner hands out read, list, watch and guard what the owner writes.
func TestReaderSeesTheOwnersWrites(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "reader")
	for name, r := range map[string]store.Reader[testObj]{
		"handed out": c.Reader(),
		"opened":     store.NewReader(shared, c.Kind(), store.JSONCodec[testObj]()),
	} {
		t.Run(name, func(t *testing.T) {
			if r.Kind() != c.Kind() {
				t.Fatalf("kind %q, want %q", r.Kind(), c.Kind())
			}
			obj := name
			rev := must[int64](t)(c.Create(ctx, obj, testObj{Spec: "v1"}))
			ev := <-r.Watch(ctx, rev-1)
			if ev.Type != store.Added || ev.Name != obj || ev.Object.Spec != "v1" {
				t.Fatalf("watch event %+v", ev)
			}
			got, grev, err := r.Get(ctx, obj)
			if err != nil || got.Spec != "v1" || grev != rev {
				t.Fatalf("Get = %+v %d %v", got, grev, err)
			}
			l, err := r.List(ctx, store.ListOptions{})
			if err != nil || len(l.Items) == 0 {
				t.Fatalf("List = %+v %v", l, err)
			}
			if _, err := shared.Txn(ctx).If(r.RevIs(obj, rev), r.Exists(obj), r.Absent("missing")).Commit(); err != nil {
				t.Fatalf("guards of a Reader: %v", err)
			}
			if _, err := shared.Txn(ctx).If(r.RevIs(obj, rev+100)).Commit(); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("stale guard: %v, want ErrConflict", err)
			}
		})
	}
}

// TestWatchNamesDecodesNothing: WatchNames names every change in order,
// deletions included, without decoding the values: a value the kind's
// codec cannot decode ends a Watch with an Error event but is only a name
// to WatchNames.
func TestWatchNamesDecodesNothing(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "names")
	from := must[int64](t)(c.Create(ctx, "a", testObj{Spec: "v1"}))
	other := store.NewCollection(shared, c.Kind(), store.JSONCodec[map[string]any]()) // a value testObj's codec refuses
	must[int64](t)(other.Create(ctx, "b", map[string]any{"spec": 5}))
	if err := c.Delete(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	names := c.Reader().WatchNames(ctx, from)
	for _, want := range []struct {
		typ  store.EventType
		name string
	}{{store.Added, "b"}, {store.Deleted, "a"}} {
		ev := <-names
		if ev.Type != want.typ || ev.Name != want.name || ev.Err != nil {
			t.Fatalf("WatchNames event %+v, want %s %s", ev, want.typ, want.name)
		}
	}
	if ev := <-c.Reader().Watch(ctx, from); ev.Type != store.Error {
		t.Fatalf("Watch of the undecodable value: %+v, want an Error event", ev)
	}
}
