// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/hub/store"
)

// churn writes n bench jobs (100 per transaction), deletes them all and
// returns the revision after the deletes.
func churn(tb testing.TB, s *store.Store, c *store.Collection[benchJob], n int) int64 {
	tb.Helper()
	ctx := context.Background()
	for _, del := range []bool{false, true} {
		for i := 0; i < n; i += 100 {
			txn := s.Txn(ctx)
			for k := i; k < min(i+100, n); k++ {
				name := fmt.Sprintf("job-%07d", k)
				if del {
					txn.Then(c.DeleteOp(name))
				} else {
					txn.Then(c.PutOp(name, newBenchJob(name)))
				}
			}
			if _, err := txn.Commit(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return rev
}

// compactDefrag compacts at rev, defragments, and returns the database
// size before the compaction, after it and after the defragmentation.
func compactDefrag(tb testing.TB, s *store.Store, rev int64) (before, compacted, defragged int64) {
	tb.Helper()
	ctx := context.Background()
	size := func() int64 {
		n, _, err := s.Size(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		return n
	}
	before = size()
	if err := s.Compact(ctx, rev); err != nil {
		tb.Fatal(err)
	}
	compacted = size()
	if err := s.Defragment(ctx); err != nil {
		tb.Fatal(err)
	}
	return before, compacted, size()
}

// TestDefragmentReturnsDeletedJobsSpace: after jobs are written and
// deleted, compaction frees their pages inside the file and
// defragmentation shrinks the file.
func TestDefragmentReturnsDeletedJobsSpace(t *testing.T) {
	s, err := store.Open(testCtx(t), store.Config{DataDir: t.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c := store.NewCollection(s, "defragjobs", store.JSONCodec[benchJob]())
	rev := churn(t, s, c, 3000)
	_, inUse, err := s.Size(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	before, compacted, after := compactDefrag(t, s, rev)
	t.Logf("3000 jobs written and deleted: %d bytes (in use %d), after compaction %d, after defragmentation %d", before, inUse, compacted, after)
	if after >= before/2 {
		t.Errorf("defragmentation left %d of %d bytes", after, before)
	}
}

// TestRunDefragOnItsInterval: the scheduled defragmentation shrinks a
// compacted file when its interval ticks, and ends with its ctx.
func TestRunDefragOnItsInterval(t *testing.T) {
	s, err := store.Open(testCtx(t), store.Config{DataDir: t.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c := store.NewCollection(s, "defragjobs", store.JSONCodec[benchJob]())
	if err := s.Compact(testCtx(t), churn(t, s, c, 2000)); err != nil {
		t.Fatal(err)
	}
	before, _, _ := s.Size(testCtx(t))
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- s.RunDefrag(ctx, store.DefragConfig{Interval: time.Hour, Clock: clk}) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if clk.HasWaiters() {
			clk.Step(time.Hour)
		}
		if n, _, _ := s.Size(testCtx(t)); n < before/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("file still %d bytes (was %d) after the interval ticked", func() int64 { n, _, _ := s.Size(testCtx(t)); return n }(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := shared.RunDefrag(testCtx(t), store.DefragConfig{}); err != nil { // interval 0: off, returns at once
		t.Fatal(err)
	}
}

// BenchmarkCompactDefrag100k writes and deletes SHOAL_BENCH_JOBS (default
// 100,000) bench jobs and reports the database size before compaction,
// after it and after defragmentation (MB), and how long each took.
func BenchmarkCompactDefrag100k(b *testing.B) {
	if testing.Short() {
		b.Skip("writes 100k jobs")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("SHOAL_BENCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		b.StopTimer()
		s := openBench(b, store.EmbeddedConfig{UnsafeNoFsync: true})
		c := store.NewCollection(s, "defragjobs", store.JSONCodec[benchJob]())
		rev := churn(b, s, c, n)
		b.StartTimer()
		before, compacted, after := compactDefrag(b, s, rev)
		b.ReportMetric(float64(before)/1e6, "MB-before")
		b.ReportMetric(float64(compacted)/1e6, "MB-compacted")
		b.ReportMetric(float64(after)/1e6, "MB-defragmented")
	}
}
