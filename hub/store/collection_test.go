// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

func TestCollectionOptimisticConcurrency(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "crud")
	rev1 := must[int64](t)(c.Create(ctx, "org/team/a", testObj{Spec: "v1"}))
	rev2 := must[int64](t)(c.Update(ctx, "org/team/a", testObj{Spec: "v2"}, rev1))

	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"create taken name", func() error { _, err := c.Create(ctx, "org/team/a", testObj{}); return err }, store.ErrAlreadyExists},
		{"update with stale revision", func() error { _, err := c.Update(ctx, "org/team/a", testObj{}, rev1); return err }, store.ErrConflict},
		{"update missing", func() error { _, err := c.Update(ctx, "missing", testObj{}, 0); return err }, store.ErrNotFound},
		{"update missing with revision", func() error { _, err := c.Update(ctx, "missing", testObj{}, rev2); return err }, store.ErrNotFound},
		{"delete with stale revision", func() error { return c.Delete(ctx, "org/team/a", rev1) }, store.ErrConflict},
		{"delete missing", func() error { return c.Delete(ctx, "missing", 0) }, store.ErrNotFound},
		{"get missing", func() error { _, _, err := c.Get(ctx, "missing"); return err }, store.ErrNotFound},
		{"empty name", func() error { _, err := c.Create(ctx, "", testObj{}); return err }, store.ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
		})
	}

	got, rev, err := c.Get(ctx, "org/team/a")
	if err != nil || got.Spec != "v2" || rev != rev2 {
		t.Fatalf("Get = %+v, %d, %v; want v2 at %d (failed writes must not change it)", got, rev, err, rev2)
	}
	if err := c.Delete(ctx, "org/team/a", rev2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "org/team/a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	rev3 := must[int64](t)(c.Create(ctx, "org/team/a", testObj{Spec: "v3"}))
	if rev3 <= rev2 {
		t.Fatalf("recreated revision %d not after %d", rev3, rev2)
	}
	if err := c.Delete(ctx, "org/team/a", 0); err != nil {
		t.Fatalf("unconditional Delete: %v", err)
	}
}

func TestGuaranteedUpdateRetriesConflicts(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "counter")
	must[int64](t)(c.Create(ctx, "n", testObj{}))
	const workers, increments = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range increments {
				_, _, err := c.GuaranteedUpdate(ctx, "n", func(o testObj) (testObj, error) {
					o.Count++
					return o, nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _, err := c.Get(ctx, "n")
	if err != nil || got.Count != workers*increments {
		t.Fatalf("Count = %d, %v; want %d (lost updates)", got.Count, err, workers*increments)
	}
}

func TestGuaranteedUpdateStopsOnError(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "gu")
	rev := must[int64](t)(c.Create(ctx, "a", testObj{Spec: "keep"}))
	boom := errors.New("boom")
	if _, _, err := c.GuaranteedUpdate(ctx, "a", func(o testObj) (testObj, error) { return o, boom }); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want boom", err)
	}
	if _, _, err := c.GuaranteedUpdate(ctx, "missing", func(o testObj) (testObj, error) { return o, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: error = %v, want ErrNotFound", err)
	}
	if _, got, _ := c.Get(ctx, "a"); got != rev {
		t.Fatalf("revision %d after failed update, want %d", got, rev)
	}
}
