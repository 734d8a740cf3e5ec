// SPDX-License-Identifier: Apache-2.0

// Package threadprio sets the nice value of the calling OS thread alone
// (Linux: setpriority on the thread's ID), for a goroutine locked to its
// thread (runtime.LockOSThread) whose wait for a core matters more than the
// rest of the process's work: the hub's scheduling cycle
// (docs/scheduling.md, "The cycle's thread"). The caller restores the
// previous value before it unlocks the thread, which goes back to the
// runtime's pool.
package threadprio
