// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestQueueQuotaEnforcedAndStatusWritten: a queue with nominal 16 H100 and
// borrowing limit 0 gets two 8-GPU jobs of four on a fleet of 32; the others
// wait with QuotaExceeded in their Placed condition, and the queue's status
// says what it holds.
func TestQueueQuotaEnforcedAndStatusWritten(t *testing.T) {
	e := newEnv(t)
	qs := queues.New(e.Store, e.Jobs)
	if _, _, err := qs.Update(e.Ctx, testqueue.New("research").Quota("h100", 16).BorrowingLimit("h100", 0).Obj(), 0); err != nil {
		t.Fatal(err)
	}
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0))
	for _, name := range []string{"j0", "j1", "j2", "j3"} {
		e.Submit(name, 1, 8)
	}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placed) != 2 || res.Placed[0] != "j0" || res.Placed[1] != "j1" {
		t.Fatalf("placed %v, want [j0 j1]", res.Placed)
	}
	for _, name := range []string{"j2", "j3"} {
		c := meta.FindStatusCondition(e.Job(name).Status.Conditions, v1alpha1.JobConditionPlaced)
		want := "queue research would hold 24 h100 GPUs, quota nominal 16 + borrowing 0"
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "QuotaExceeded" || c.Message != want {
			t.Errorf("%s Placed condition %+v, want QuotaExceeded %q", name, c, want)
		}
	}
	q, rev, err := qs.Get(e.Ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.QueueStatus{PendingJobs: 2, ActiveJobs: 2, UsedGPUs: map[string]int32{"h100": 16}}
	if !queues.StatusEqual(q.Status, want) {
		t.Fatalf("queue status %+v, want %+v", q.Status, want)
	}
	// Nothing changed: no status write, and still two jobs of 8 only.
	if res, err = s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 0 {
		t.Fatalf("second cycle placed %v (%v)", res.Placed, err)
	}
	if _, rev2, _ := qs.Get(e.Ctx, "research"); rev2 != rev {
		t.Errorf("status rewritten without a change (revision %d -> %d)", rev, rev2)
	}
}

// TestQueueBorrowsIdleNominalOfOthers: with borrowing unlimited, research
// borrows the idle nominal of queue spare and no more, and its status says
// how much it borrows.
func TestQueueBorrowsIdleNominalOfOthers(t *testing.T) {
	e := newEnv(t)
	qs := queues.New(e.Store, e.Jobs)
	if _, _, err := qs.Update(e.Ctx, testqueue.New("research").Quota("h100", 8).Obj(), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := qs.Create(e.Ctx, testqueue.New("spare").Quota("h100", 8).Obj()); err != nil {
		t.Fatal(err)
	}
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0))
	for _, name := range []string{"j0", "j1", "j2"} {
		e.Submit(name, 1, 8)
	}
	res, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil)
	if err != nil || len(res.Placed) != 2 {
		t.Fatalf("placed %v (%v), want two jobs: nominal 8 + spare's idle 8", res.Placed, err)
	}
	q, _, err := qs.Get(e.Ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	if q.Status.PendingJobs != 1 || q.Status.ActiveJobs != 2 || !maps.Equal(q.Status.UsedGPUs, map[string]int32{"h100": 16}) ||
		!maps.Equal(q.Status.BorrowedGPUs, map[string]int32{"h100": 8}) {
		t.Errorf("research status %+v", q.Status)
	}
	if sp, _, _ := qs.Get(e.Ctx, "spare"); sp.Status.ActiveJobs != 0 || len(sp.Status.UsedGPUs) != 0 {
		t.Errorf("spare status %+v", sp.Status)
	}
}

// TestQueueReclaimsBorrowedQuota: research borrows spare's idle nominal;
// spare opted into reclaim, so its job within nominal marks research's
// borrowed jobs as preempted, naming the reclaim.
func TestQueueReclaimsBorrowedQuota(t *testing.T) {
	e := newEnv(t)
	qs := queues.New(e.Store, e.Jobs)
	if _, _, err := qs.Update(e.Ctx, testqueue.New("research").Quota("h100", 8).Obj(), 0); err != nil {
		t.Fatal(err)
	}
	spare := testqueue.New("spare").Quota("h100", 16).Obj()
	spare.Spec.ReclaimBorrowed = true
	if _, _, err := qs.Create(e.Ctx, spare); err != nil {
		t.Fatal(err)
	}
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0))
	for _, name := range []string{"r0", "r1", "r2"} {
		e.Submit(name, 1, 8)
	}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 3 {
		t.Fatalf("placed %v (%v), want research's three: nominal 8 + spare's idle 16", res.Placed, err)
	}
	e.Submit("s0", 2, 8, func(j *v1alpha1.Job) { j.Spec.Queue = "spare" })
	e.Clock.Step(time.Hour) // past the engine's wait before a gang may preempt
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil || len(res.Preempted) != 2 {
		t.Fatalf("preempted %v (%v), want two of research's borrowed jobs", res.Preempted, err)
	}
	for _, name := range res.Preempted {
		c := meta.FindStatusCondition(e.Job(name).Status.Conditions, v1alpha1.JobConditionPreempted)
		if c == nil || !strings.Contains(c.Message, "queue research borrows beyond its nominal quota and spare reclaims it") {
			t.Errorf("%s Preempted condition %+v", name, c)
		}
	}
}
