// SPDX-License-Identifier: Apache-2.0

//go:build linux

package threadprio

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Set gives the calling thread the nice value n (-20 to 19; below the
// process's own value needs CAP_SYS_NICE or RLIMIT_NICE) and returns the
// value it had, for Restore.
func Set(n int) (prev int, err error) {
	prev, err = Get()
	if err != nil {
		return 0, fmt.Errorf("read the nice value of thread %d: %w", unix.Gettid(), err)
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n); err != nil {
		return prev, fmt.Errorf("set the nice value of thread %d to %d: %w", unix.Gettid(), n, err)
	}
	return prev, nil
}

// Get is the calling thread's nice value.
func Get() (int, error) {
	// The raw syscall answers 20 - nice (1 to 40), as glibc's wrapper undoes.
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	return 20 - raw, err
}

// Restore sets the calling thread's nice value back to prev (from Set).
// Raising a nice value needs no privilege, so it does not fail after a Set
// that lowered it.
func Restore(prev int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), prev)
}
