// SPDX-License-Identifier: Apache-2.0

// Package cputime reads the CPU time of the calling OS thread: with the
// goroutine locked to its thread (runtime.LockOSThread), the CPU a piece
// of work took, apart from the time it waited for a core the machine's
// other processes and goroutines held. The scheduler reports its cycles'
// CPU beside their wall time with it (docs/metrics.md). RunDelay, where
// the kernel accounts it, splits the rest: the time the thread waited for
// a core (other processes, or threads of its own process, held them),
// against the time it did not want one (its goroutine blocked, or waiting
// for the Go scheduler to run it again).
package cputime
