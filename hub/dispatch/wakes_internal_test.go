// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestWakesOrderAndReplace: the deadlines come due in time order; a job's
// new deadline replaces its old one (earlier or later), a zero one removes
// it, and only a deadline earlier than every other signals the loop.
func TestWakesOrderAndReplace(t *testing.T) {
	d := &Dispatcher{}
	earlier, forget := d.resetWakes()
	defer forget()
	t0 := time.Unix(1000, 0)
	signalled := func() bool {
		select {
		case <-earlier:
			return true
		default:
			return false
		}
	}
	d.setWake("a", t0.Add(5*time.Second))
	if !signalled() {
		t.Fatal("the first deadline did not signal")
	}
	d.setWake("b", t0.Add(9*time.Second))
	if signalled() {
		t.Fatal("a later deadline signalled")
	}
	d.setWake("c", t0.Add(2*time.Second))
	if !signalled() {
		t.Fatal("an earlier deadline did not signal")
	}
	d.setWake("c", t0.Add(7*time.Second)) // later now: a stale entry stays behind
	d.setWake("b", t0.Add(time.Second))   // earlier now
	if !signalled() {
		t.Fatal("a job's earlier deadline did not signal")
	}
	d.setWake("a", time.Time{}) // none now
	if got := d.earliest(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("earliest %v", got)
	}
	if got := d.due(t0.Add(6 * time.Second)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("due at +6s: %v (c's old deadline or a's removed one came due)", got)
	}
	if got := d.due(t0.Add(7 * time.Second)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("due at +7s: %v", got)
	}
	if got := d.earliest(); !got.IsZero() {
		t.Fatalf("earliest %v with nothing pending", got)
	}
}

// TestWakesStayCompact: many deadlines replaced over and over leave the
// heap proportional to the jobs waiting, and due still returns each job
// once, at its last deadline.
func TestWakesStayCompact(t *testing.T) {
	d := &Dispatcher{}
	_, forget := d.resetWakes()
	defer forget()
	t0 := time.Unix(1000, 0)
	for round := range 50 {
		for i := range 100 {
			d.setWake(fmt.Sprint(i), t0.Add(time.Duration(round*100+i)*time.Millisecond))
		}
	}
	if n := len(d.wakes.h); n > 2*100+64 {
		t.Fatalf("heap holds %d entries for 100 jobs", n)
	}
	got := d.due(t0.Add(time.Hour))
	if len(got) != 100 {
		t.Fatalf("%d jobs due, want 100", len(got))
	}
	want := make([]string, 100)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("due in order %v", got)
	}
}
