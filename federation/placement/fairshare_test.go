// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"maps"
	"testing"
	"time"
)

// TestFairShareRestoreContinues: a tracker restored from another's state
// advances exactly as the original does.
func TestFairShareRestoreContinues(t *testing.T) {
	a := NewFairShare(time.Hour)
	a.Advance(t0, nil)
	a.Advance(t0.Add(time.Hour), map[string]int{"x": 8, "y": 2})
	b := NewFairShare(time.Hour)
	b.Restore(a.State())
	next := t0.Add(90 * time.Minute)
	a.Advance(next, map[string]int{"y": 4})
	b.Advance(next, map[string]int{"y": 4})
	if !maps.Equal(a.Usage(), b.Usage()) || a.Usage()["x"] == 0 {
		t.Fatalf("restored usage %v, original %v", b.Usage(), a.Usage())
	}
	st := a.State()
	st.Usage["x"] = -1 // the state is a copy
	if a.Usage()["x"] < 0 {
		t.Error("State shares the tracker's map")
	}
}
