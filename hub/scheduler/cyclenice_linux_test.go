// SPDX-License-Identifier: Apache-2.0

//go:build linux

package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/threadprio"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestLeaderCycleThreadNice: with Config.CycleNice the leader's cycle
// thread, and only it, runs at that nice value while it leads, and no
// thread keeps it after the leadership ends (the thread is restored
// before it goes back to the runtime). A value above the process's needs
// no privilege, so the test can run anywhere.
func TestLeaderCycleThreadNice(t *testing.T) {
	base, err := threadprio.Get()
	if err != nil {
		t.Fatal(err)
	}
	want := min(base+7, 19)
	if want == base {
		t.Skipf("the process runs at nice %d already", base)
	}
	e := hubtest.New(t)
	e.Cluster("eu1", inventory.Node{Name: "a", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
	s := New(e.Store, Config{Clock: e.Clock, Interval: 10 * time.Millisecond, CycleNice: want})
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for threadsAtNice(t, want) != 1 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no single thread at nice %d within 30 s while leading", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := threadsAtNice(t, want); n != 0 {
		t.Errorf("%d threads still at nice %d after the leadership ended", n, want)
	}
}

// threadsAtNice counts this process's threads at nice value n
// (/proc/self/task/*/stat, field 19).
func threadsAtNice(t *testing.T, n int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 16 {
			if v, err := strconv.Atoi(fields[16]); err == nil && v == n {
				count++
			}
		}
	}
	return count
}

// TestLeaderSparesProcsForARaisedCycle: a leader whose cycle thread runs
// below the process's nice value has twice the Ps while it leads, and the
// process gets its own back after; one above the process's changes
// nothing. Lowering a nice value needs CAP_SYS_NICE: skipped without it.
func TestLeaderSparesProcsForARaisedCycle(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: the hub leaves it alone")
	}
	base, err := threadprio.Get()
	if err != nil {
		t.Fatal(err)
	}
	if !mayLowerNice(base) {
		t.Skip("this process may not lower a thread's nice value (CAP_SYS_NICE)")
	}
	procs := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		nice, want int
	}{{base - 1, 2 * procs}, {min(base+1, 19), procs}} {
		e := hubtest.New(t)
		e.Cluster("eu1", inventory.Node{Name: "a", GPUs: 8, CapacityGPUs: 8, Ready: true, Product: "NVIDIA-H100-80GB-HBM3"})
		s := New(e.Store, Config{Clock: e.Clock, Interval: 10 * time.Millisecond, CycleNice: tc.nice})
		ctx, cancel := context.WithCancel(e.Ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		for deadline := time.Now().Add(30 * time.Second); threadsAtNice(t, tc.nice) != 1; {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("no thread at nice %d within 30 s", tc.nice)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("cycle at nice %d (process %d): GOMAXPROCS %d while leading, want %d", tc.nice, base, got, tc.want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Errorf("cycle at nice %d: GOMAXPROCS %d after the leadership, want %d", tc.nice, got, procs)
		}
	}
}

// mayLowerNice says whether this process may give a thread a nice value
// below base (tried on the calling thread, locked meanwhile, and undone).
func mayLowerNice(base int) bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if base <= -20 {
		return false
	}
	if _, err := threadprio.Set(base - 1); err != nil {
		return false
	}
	return threadprio.Restore(base) == nil
}
