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
