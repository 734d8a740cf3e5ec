// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// TestPreparingMembersAreBounded: with room for 4 preparing members, of
// three placed 2-member gangs two start preparing and the third waits —
// reservation kept, no member pod, no decision, no rendezvous Service —
// until one of the first two commits; then it starts.
func TestPreparingMembersAreBounded(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, PrepareTimeout: 10 * time.Second, MaxPreparingMembers: 4, Workers: 1})
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0), node("e", "r", 0), node("f", "r", 0))
	for _, j := range []string{"ja", "jb", "jc"} {
		r.Submit(j, 2, 8)
	}
	r.cycle()
	for range 2 { // the second pass changes nothing
		r.passWith(d)
		for j, want := range map[string]int{"ja": 2, "jb": 2, "jc": 0} {
			if n := len(r.pods(j)); n != want {
				t.Fatalf("%s has %d members, want %d", j, n, want)
			}
		}
		if !r.reserved("jc") || jobs.DispatchOf(r.Job("jc")) != nil {
			t.Fatalf("the waiting gang: reserved %v, dispatch %+v", r.reserved("jc"), jobs.DispatchOf(r.Job("jc")))
		}
		if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "jc", metav1.GetOptions{}); err == nil {
			t.Fatal("a rendezvous Service for the waiting gang")
		}
	}
	r.agent("ja", -1, "")
	r.passWith(d) // ja commits: its members leave the count, jc starts
	if dd := jobs.DispatchOf(r.Job("ja")); dd == nil || dd.Phase != v1alpha1.DispatchCommitted {
		t.Fatalf("ja not committed: %+v", dd)
	}
	if dd := jobs.DispatchOf(r.Job("jc")); dd == nil || dd.Phase != v1alpha1.DispatchPreparing || len(r.pods("jc")) != 2 {
		t.Fatalf("jc did not start once ja committed: dispatch %+v, %d members", dd, len(r.pods("jc")))
	}
}

// TestGangLargerThanTheBoundStartsAlone: a gang with more members than
// MaxPreparingMembers starts when no other is preparing, and the next
// waits for it.
func TestGangLargerThanTheBoundStartsAlone(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, PrepareTimeout: 10 * time.Second, MaxPreparingMembers: 1, Workers: 1})
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0))
	r.Submit("ja", 2, 8)
	r.Submit("jb", 1, 8)
	r.cycle()
	r.passWith(d)
	if len(r.pods("ja")) != 2 || len(r.pods("jb")) != 0 {
		t.Fatalf("ja %d members, jb %d: the large gang should start alone", len(r.pods("ja")), len(r.pods("jb")))
	}
	r.agent("ja", -1, "")
	r.passWith(d)
	if len(r.pods("jb")) != 1 {
		t.Fatalf("jb did not start after ja committed: %d members", len(r.pods("jb")))
	}
}

// TestLeadStartsTheWaitingGangWhenRoomFrees: under Lead (no sweep: interval
// and resync an hour) the gang waiting in line is queued again when the
// gang before it commits, and starts.
func TestLeadStartsTheWaitingGangWhenRoomFrees(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0))
	r.Submit("ja", 2, 8)
	r.Submit("jb", 2, 8)
	r.cycle()
	r.leadingWith(dispatch.Config{Clock: r.Clock, Interval: time.Hour, Resync: time.Hour, MaxPreparingMembers: 2, Workers: 2})
	var first, second string
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		a, b := len(r.pods("ja")), len(r.pods("jb"))
		switch {
		case a == 2 && b == 0:
			first, second = "ja", "jb"
		case b == 2 && a == 0:
			first, second = "jb", "ja"
		}
		return first != "", nil
	})
	if err != nil {
		t.Fatalf("not one gang preparing alone: ja %d members, jb %d", len(r.pods("ja")), len(r.pods("jb")))
	}
	time.Sleep(200 * time.Millisecond) // the workers settle; the other must still wait
	if n := len(r.pods(second)); n != 0 {
		t.Fatalf("%s started beside %s: %d members", second, first, n)
	}
	r.agent(first, -1, "")
	err = wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(r.pods(second)) == 2, nil
	})
	if err != nil {
		t.Fatalf("%s did not start once %s committed: dispatch %+v", second, first, jobs.DispatchOf(r.Job(first)))
	}
}
