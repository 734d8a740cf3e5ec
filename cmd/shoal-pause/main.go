// SPDX-License-Identifier: Apache-2.0

// Command shoal-pause is the fleet's pause image binary, built static
// (CGO_ENABLED=0): PID 1 of every pod sandbox. It reaps every child that
// exits, exits 0 on SIGINT or SIGTERM, ignores SIGHUP, and otherwise blocks
// for ever, as the pause binary of Kubernetes does.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/shoal-dev/shoal/internal/pause"
)

func main() {
	signal.Ignore(syscall.SIGHUP) // the Go runtime would exit on it; pause does not
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	pause.Reap() // children that ended before Notify
	sig := pause.Wait(sigs, pause.Reap)
	fmt.Fprintf(os.Stderr, "shoal-pause: shutting down, got signal %v\n", sig)
	os.Exit(0)
}
