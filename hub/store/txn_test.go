// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

func TestTxnWritesAllOrNothing(t *testing.T) {
	ctx := testCtx(t)
	jobs, ledger := collection(t, "jobs"), collection(t, "ledger")
	jobRev := must[int64](t)(jobs.Create(ctx, "j", testObj{Status: "Pending"}))

	rev, err := shared.Txn(ctx).
		If(jobs.RevIs("j", jobRev), ledger.Absent("gpu-0"), ledger.Absent("gpu-1")).
		Then(jobs.PutOp("j", testObj{Status: "Scheduled"}), ledger.PutOp("gpu-0", testObj{Spec: "j"}), ledger.PutOp("gpu-1", testObj{Spec: "j"})).
		Commit()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gpu-0", "gpu-1"} {
		if _, r, err := ledger.Get(ctx, name); err != nil || r != rev {
			t.Fatalf("ledger %s at %d, %v; want %d", name, r, err, rev)
		}
	}

	tests := []struct {
		name  string
		conds []store.Cond
	}{
		{"stale revision", []store.Cond{jobs.RevIs("j", jobRev)}},
		{"object exists", []store.Cond{ledger.Absent("gpu-0")}},
		{"object missing", []store.Cond{ledger.Exists("gpu-9")}},
		{"one of several", []store.Cond{jobs.RevIs("j", rev), ledger.Absent("gpu-1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := shared.Txn(ctx).If(tt.conds...).
				Then(jobs.PutOp("j", testObj{Status: "Broken"}), ledger.DeleteOp("gpu-0")).
				Commit()
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("error = %v, want ErrConflict", err)
			}
			if got, r, _ := jobs.Get(ctx, "j"); got.Status != "Scheduled" || r != rev {
				t.Fatalf("job %+v at %d after failed txn", got, r)
			}
			if _, _, err := ledger.Get(ctx, "gpu-0"); err != nil {
				t.Fatalf("gpu-0 after failed txn: %v", err)
			}
		})
	}
	if _, err := shared.Txn(ctx).Then(jobs.PutOp("", testObj{})).Commit(); !errors.Is(err, store.ErrInvalidName) {
		t.Fatalf("invalid name: %v, want ErrInvalidName", err)
	}
}

// Two schedulers racing for the same GPUs: exactly one booking wins.
func TestTxnNeverDoubleBooks(t *testing.T) {
	ctx := testCtx(t)
	ledger := collection(t, "ledger")
	const racers = 8
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			owner := testObj{Spec: fmt.Sprintf("job-%d", i)}
			_, err := shared.Txn(ctx).
				If(ledger.Absent("node-1/gpu-0"), ledger.Absent("node-1/gpu-1")).
				Then(ledger.PutOp("node-1/gpu-0", owner), ledger.PutOp("node-1/gpu-1", owner)).
				Commit()
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, store.ErrConflict):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d bookings won, want exactly 1", wins.Load())
	}
	a, _, _ := ledger.Get(ctx, "node-1/gpu-0")
	b, _, _ := ledger.Get(ctx, "node-1/gpu-1")
	if a.Spec != b.Spec {
		t.Fatalf("GPUs booked by %s and %s", a.Spec, b.Spec)
	}
}

func TestTxnSize(t *testing.T) {
	ctx := testCtx(t)
	ledger := collection(t, "ledger")
	big := func(n int) *store.Txn {
		txn := shared.Txn(ctx)
		for i := range n {
			txn.Then(ledger.PutOp(fmt.Sprintf("node-%04d", i), testObj{Spec: "gang"}))
		}
		return txn
	}
	// A 1,024-GPU gang on 8-GPU nodes books 128 nodes plus the job.
	if _, err := big(129).Commit(); err != nil {
		t.Fatalf("129 operations: %v", err)
	}
	if _, err := big(5000).Commit(); !errors.Is(err, store.ErrTxnTooLarge) {
		t.Fatalf("5000 operations: %v, want ErrTxnTooLarge", err)
	}
}
