// SPDX-License-Identifier: Apache-2.0

//go:build linux

package threadprio

import (
	"runtime"
	"testing"
)

// TestSetChangesOnlyTheCallingThread raises the calling thread's nice
// value (no privilege needed), reads it back, checks that another thread
// kept its own, and restores it.
func TestSetChangesOnlyTheCallingThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	want := min(before+5, 19)
	prev, err := Set(want)
	if err != nil {
		t.Fatal(err)
	}
	if prev != before {
		t.Errorf("Set returned %d as the previous value, Get said %d", prev, before)
	}
	if got, _ := Get(); got != want {
		t.Errorf("nice %d after Set(%d)", got, want)
	}
	other := make(chan int)
	go func() {
		runtime.LockOSThread() // a thread of its own, never this one
		defer runtime.UnlockOSThread()
		n, _ := Get()
		other <- n
	}()
	if n := <-other; n != before {
		t.Errorf("another thread's nice is %d, want %d (the process's)", n, before)
	}
	if err := Restore(prev); err != nil {
		t.Fatal(err)
	}
	if got, _ := Get(); got != before {
		t.Errorf("nice %d after Restore, want %d", got, before)
	}
}
