// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"slices"
	"testing"
)

// TestAdmissionQueuesTheFirstInLineOnlyWhenItMayStart: the gang first in
// line is queued again when a slot frees or it becomes first, not after
// every reconcile of a job that changes neither.
func TestAdmissionQueuesTheFirstInLineOnlyWhenItMayStart(t *testing.T) {
	a := newAdmission(4)
	var queued []string
	a.reset(func(job string) { queued = append(queued, job) })
	if !a.admit("a", 4) {
		t.Fatal("a refused with room")
	}
	a.done("a", 4, false)
	for _, j := range []string{"b", "c"} {
		if a.admit(j, 2) {
			t.Fatalf("%s admitted with no room", j)
		}
		a.done(j, 0, true)
	}
	queued = nil
	for range 3 {
		a.done("pending", 0, false) // a job that never prepared
		a.done("a", 4, false)       // a, still preparing
	}
	if len(queued) != 0 {
		t.Fatalf("queued %v after reconciles that freed nothing", queued)
	}
	a.done("a", 0, false) // a commits
	if !slices.Equal(queued, []string{"b"}) {
		t.Fatalf("queued %v when a committed, want [b]", queued)
	}
	queued = nil
	a.done("b", 0, false) // b is gone (its reservation released) before it started
	if !slices.Equal(queued, []string{"c"}) {
		t.Fatalf("queued %v when b left the line, want [c]", queued)
	}
}
