// SPDX-License-Identifier: Apache-2.0

// Package cputime reads the CPU time of the calling OS thread: with the
// goroutine locked to its thread (runtime.LockOSThread), the CPU a piece
// of work took, apart from the time it waited for a core the machine's
// other processes and goroutines held. The scheduler reports its cycles'
// CPU beside their wall time with it (docs/metrics.md).
package cputime
