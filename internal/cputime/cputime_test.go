// SPDX-License-Identifier: Apache-2.0

package cputime_test

import (
	"runtime"
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
