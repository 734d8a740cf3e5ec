// SPDX-License-Identifier: Apache-2.0

//go:build linux

package cputime

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the CPU time the calling OS thread has used, and whether the
// platform gives it.
func Thread() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// RunDelay is the time the calling OS thread has spent runnable but
// waiting for a core (the second field of /proc/thread-self/schedstat),
// and whether the kernel accounts it: only with delay accounting
// (sysctl kernel.task_delayacct=1) or scheduler statistics
// (kernel.sched_schedstats=1) on, else the field stays 0.
func RunDelay() (time.Duration, bool) {
	if !accounted() {
		return 0, false
	}
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}

// accounted says whether the kernel counts threads' run delay, read once.
var accounted = sync.OnceValue(func() bool {
	for _, f := range []string{"/proc/sys/kernel/task_delayacct", "/proc/sys/kernel/sched_schedstats"} {
		if b, err := os.ReadFile(f); err == nil && string(bytes.TrimSpace(b)) == "1" {
			return true
		}
	}
	return false
})
