// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestQueueCountsWrittenAtMostEverySecond: a leader writes a queue's
// status at once the first time and whenever its conditions change; a
// change in counts alone within queueCountsEvery of its last write waits,
// and a cycle is asked for when it is due. A scheduler that does not lead
// writes every change.
func TestQueueCountsWrittenAtMostEverySecond(t *testing.T) {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q"}}
	q.Status = v1alpha1.QueueStatus{PendingJobs: 3, ActiveJobs: 1, UsedGPUs: map[string]int32{"h100": 8}}
	counts := q.Status
	counts.PendingJobs, counts.UsedGPUs = 4, map[string]int32{"h100": 16}
	conds := counts
	conds.Conditions = []metav1.Condition{{Type: "Usable", Status: metav1.ConditionFalse, Reason: "Cycle"}}

	s := &Scheduler{}
	if s.countsLater(q, counts) {
		t.Fatal("a scheduler that does not lead deferred a write")
	}
	var asked []time.Duration
	s.queueWritten = map[string]time.Time{}
	s.pokeAt = func(d time.Duration) { asked = append(asked, d) }
	if s.countsLater(q, counts) {
		t.Fatal("the first write of a leadership deferred")
	}
	s.queueWritten["q"] = time.Now()
	if s.countsLater(q, q.Status) {
		t.Error("an unchanged status deferred (SetStatus skips it)")
	}
	if !s.countsLater(q, counts) {
		t.Error("a change in counts alone just after a write was not deferred")
	}
	if len(asked) != 1 || asked[0] <= 0 || asked[0] > queueCountsEvery {
		t.Errorf("asked for cycles after %v, want one within %v", asked, queueCountsEvery)
	}
	if s.countsLater(q, conds) {
		t.Error("a change of conditions deferred")
	}
	s.queueWritten["q"] = time.Now().Add(-queueCountsEvery)
	if s.countsLater(q, counts) {
		t.Error("a change in counts a whole period after the last write deferred")
	}
}

// TestPokeAfterOnceForCoveredAsks: asks a scheduled poke already covers
// schedule no other; an earlier one does.
func TestPokeAfterOnceForCoveredAsks(t *testing.T) {
	pokes := make(chan struct{}, 10)
	at := pokeAfter(func() { pokes <- struct{}{} })
	at(50 * time.Millisecond)
	at(200 * time.Millisecond) // covered by the first
	at(10 * time.Millisecond)  // earlier: its own
	deadline := time.After(2 * time.Second)
	got := 0
	for got < 2 {
		select {
		case <-pokes:
			got++
		case <-deadline:
			t.Fatalf("%d pokes, want 2", got)
		}
	}
	select {
	case <-pokes:
		t.Fatal("a third poke for an ask a scheduled one covered")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestQueueWriterWritesTheNewestOnce: the queue writer writes beside the
// cycle, one write at a time, in the order handed; a queue handed again
// while its write waits is written once, with the newest status, and
// wait returns once the writes in flight are done.
func TestQueueWriterWritesTheNewestOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var wrote []string
	w := newQueueWriter(ctx, func(_ context.Context, qw queueWrite) error {
		if qw.q.Name == "a" && qw.st.PendingJobs == 1 {
			close(entered)
			<-release // the first write holds the writer
		}
		mu.Lock()
		wrote = append(wrote, fmt.Sprintf("%s=%d", qw.q.Name, qw.st.PendingJobs))
		mu.Unlock()
		return nil
	})
	hand := func(name string, pending int32) {
		w.hand(queueWrite{q: &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}},
			st: v1alpha1.QueueStatus{PendingJobs: pending}})
	}
	hand("a", 1) // returns at once although its write blocks
	<-entered
	hand("b", 1)
	hand("a", 2)
	hand("b", 2)
	hand("a", 3)
	close(release)
	w.wait()
	want := []string{"a=1", "b=2", "a=3"}
	if !slices.Equal(wrote, want) {
		t.Fatalf("wrote %v, want %v", wrote, want)
	}
	cancel()
	hand("c", 1)
	w.wait()
	if len(wrote) != 3 {
		t.Fatalf("wrote %v after the term ended, want nothing more", wrote)
	}
}
