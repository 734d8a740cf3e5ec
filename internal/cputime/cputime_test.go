// SPDX-License-Identifier: Apache-2.0

package cputime_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/internal/cputime"
)

// TestThreadCountsWorkNotSleep: on a locked thread, a sleep adds next to
// no CPU time and busy work adds it (however slowly a loaded machine
// lets it run).
func TestThreadCountsWorkNotSleep(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := cputime.Thread()
	if !ok {
		t.Skip("no thread CPU clock on this platform")
	}
	time.Sleep(50 * time.Millisecond)
	t1, _ := cputime.Thread()
	if slept := t1 - t0; slept > 10*time.Millisecond {
		t.Errorf("a 50 ms sleep counted %v of CPU", slept)
	}
	for start := time.Now(); ; {
		if t2, _ := cputime.Thread(); t2-t1 >= 20*time.Millisecond {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("10 s of busy work did not count 20 ms of CPU")
		}
	}
}

// TestRunDelayCountsTheWaitForACore: where the kernel accounts it, a
// locked thread busy beside more busy threads than cores has waited for
// a core, and the wait never goes back.
func TestRunDelayCountsTheWaitForACore(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d0, ok := cputime.RunDelay()
	if !ok {
		t.Skip("the kernel does not account run delay here (sysctl kernel.task_delayacct=0)")
	}
	// More Ps than cores, so that the busy threads all run at once and
	// the wait is the kernel's, not the Go scheduler's.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4 * runtime.NumCPU()))
	var stop atomic.Bool
	for range 2 * runtime.NumCPU() {
		go func() {
			runtime.LockOSThread() // an OS thread of its own, competing for the cores
			defer runtime.UnlockOSThread()
			for !stop.Load() { // busy on purpose
			}
		}()
	}
	defer stop.Store(true)
	for start := time.Now(); ; {
		d, _ := cputime.RunDelay()
		if d < d0 {
			t.Fatalf("run delay went back from %v to %v", d0, d)
		}
		if d-d0 >= 5*time.Millisecond {
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("busy beside %d busy threads on %d cores for 10 s, the thread waited %v for a core", 2*runtime.NumCPU(), runtime.NumCPU(), d-d0)
		}
	}
}
