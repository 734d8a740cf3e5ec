// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"os"
	"runtime"
	"sync"

	"k8s.io/klog/v2"
)

// spare holds the Ps raised for leaders whose cycle thread runs at a
// raised priority (spareProcs): the first raises GOMAXPROCS, the last
// puts it back.
var spare struct {
	mu           sync.Mutex
	users        int
	prev, raised int
}

// spareProcs gives the Go runtime twice its Ps (GOMAXPROCS) while a
// leader's cycle thread runs at a nice value below the process's, unless
// the environment sets GOMAXPROCS; the returned function puts them back.
//
// The nice value alone does not make a cycle run sooner on a busy hub: a
// goroutine that ran 10 ms is preempted by the Go runtime, and a locked
// one then waits in the runtime's global queue until a P takes it, behind
// the hub's other goroutines, whatever its thread's priority. At F-XL on
// two cores that wait was 92 of a slow cycle's 155 ms, the kernel's only
// 11 (docs/scale.md, "Session 31"). With more Ps than cores a P is free
// to take it at once and the kernel, which honours the nice value,
// decides which thread runs; more Ps without the nice value only moved
// the wait to the kernel (100 of 153 ms).
func spareProcs(logger klog.Logger) func() {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if spare.users == 0 {
		spare.prev = runtime.GOMAXPROCS(0)
		spare.raised = 2 * spare.prev
		runtime.GOMAXPROCS(spare.raised)
		logger.Info("more Ps than CPUs for the cycle thread's priority", "gomaxprocs", spare.raised, "was", spare.prev)
	}
	spare.users++
	return func() {
		spare.mu.Lock()
		defer spare.mu.Unlock()
		spare.users--
		if spare.users == 0 && runtime.GOMAXPROCS(0) == spare.raised { // nobody changed it since
			// Back to the runtime's default, which follows the CPUs the
			// process may use (a GOMAXPROCS call turns that off), unless
			// the value before was not the default.
			runtime.SetDefaultGOMAXPROCS()
			if runtime.GOMAXPROCS(0) != spare.prev {
				runtime.GOMAXPROCS(spare.prev)
			}
		}
	}
}
