// SPDX-License-Identifier: Apache-2.0

// Package pause is the logic of shoal-pause, the process that holds a pod
// sandbox's namespaces (the pause image's binary): as PID 1 of the sandbox it
// reaps every child that exits, and it ends on SIGINT or SIGTERM.
package pause

import (
	"errors"
	"os"
	"syscall"
)

// Reap collects, without blocking, every child of this process that has
// exited, and returns how many it collected.
func Reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return n
		}
		n++
	}
}

// Wait calls reap on every SIGCHLD from sigs and returns the first SIGINT or
// SIGTERM. It blocks for ever when neither comes, which is the point.
func Wait(sigs <-chan os.Signal, reap func() int) os.Signal {
	for sig := range sigs {
		switch sig {
		case syscall.SIGINT, syscall.SIGTERM:
			return sig
		case syscall.SIGCHLD:
			reap()
		}
	}
	return nil
}
