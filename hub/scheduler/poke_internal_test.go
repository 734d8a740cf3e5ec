// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestJobChangesThatWakeTheScheduler: the dispatcher's writes while a
// placed or running gang starts (dispatch decision, member phases,
// conditions) and the scheduler's explanation of a waiting job do not poke
// a cycle; a new, deleted, requeued or finished job, a new epoch and a
// changed spec, annotation or submission time do. The
// cache's apply pokes for a batch only when one of its changes matters.
func TestJobChangesThatWakeTheScheduler(t *testing.T) {
	job := func(phase v1alpha1.JobPhase, mut func(*v1alpha1.Job)) *store.Item[*cachedJob] {
		j := &v1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"x": "1"}}}
		j.Spec.Queue = "q"
		j.Status.Phase, j.Status.Epoch = phase, 1
		if mut != nil {
			mut(j)
		}
		return &store.Item[*cachedJob]{Name: "a", Object: &cachedJob{job: j}}
	}
	members := func(j *v1alpha1.Job) {
		j.Status.Members = []v1alpha1.MemberStatus{{Index: 0, Phase: v1alpha1.MemberRunning}}
		j.Status.Dispatch = &v1alpha1.DispatchStatus{Epoch: 1, Phase: v1alpha1.DispatchCommitted}
		j.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionDispatched, Status: metav1.ConditionTrue}}
	}
	explained := func(j *v1alpha1.Job) {
		j.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionPlaced, Status: metav1.ConditionFalse,
			Reason: "Unschedulable", Message: "needs 1×8 GPUs; 0 are free"}}
	}
	placed, running := v1alpha1.JobPlaced, v1alpha1.JobRunning
	for _, tc := range []struct {
		name     string
		old, cur *store.Item[*cachedJob]
		want     bool
	}{
		{"created", nil, job(v1alpha1.JobPending, nil), true},
		{"deleted", job(placed, nil), nil, true},
		{"placed gang's dispatch and members", job(placed, nil), job(placed, members), false},
		{"running gang's members", job(running, nil), job(running, members), false},
		{"placed to running", job(placed, nil), job(running, nil), true},
		{"requeued", job(running, nil), job(v1alpha1.JobPending, nil), true},
		{"finished", job(running, nil), job(v1alpha1.JobSucceeded, nil), true},
		{"pending job's explanation", job(v1alpha1.JobPending, nil), job(v1alpha1.JobPending, explained), false},
		{"pending job's submission time", job(v1alpha1.JobPending, nil), job(v1alpha1.JobPending, func(j *v1alpha1.Job) {
			j.Status.SubmitTime = &v1alpha1.MicroTime{Time: metav1.NewTime(time.Unix(100, 0))}
		}), true},
		{"new epoch", job(placed, nil), job(placed, func(j *v1alpha1.Job) { j.Status.Epoch = 2 }), true},
		{"priority class", job(running, nil), job(running, func(j *v1alpha1.Job) { j.Spec.PriorityClass = "production" }), true},
		{"annotation", job(running, nil), job(running, func(j *v1alpha1.Job) { j.Annotations["x"] = "2" }), true},
	} {
		if got := jobChangeMatters(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: matters %v, want %v", tc.name, got, tc.want)
		}
	}

	c := newWatched(jobReader(hubtest.New(t).Store)) // nothing is read: changes are applied by hand
	c.matters = jobChangeMatters
	pokes := 0
	c.poke = func() { pokes++ }
	ev := func(it *store.Item[*cachedJob], rev int64) store.WatchEvent[*cachedJob] {
		return store.WatchEvent[*cachedJob]{Type: store.Modified, Name: it.Name, Object: it.Object, Revision: rev}
	}
	c.apply([]store.WatchEvent[*cachedJob]{ev(job(placed, nil), 1)}) // created
	c.apply([]store.WatchEvent[*cachedJob]{ev(job(placed, members), 2)})
	if pokes != 1 {
		t.Fatalf("%d pokes after a creation and a member-phase write, want 1", pokes)
	}
	c.apply([]store.WatchEvent[*cachedJob]{ev(job(placed, members), 3), ev(job(running, members), 4)})
	if pokes != 2 {
		t.Fatalf("%d pokes after a batch with a phase change, want 2", pokes)
	}
}

// TestPauseBetweenCycles: after a cycle that placed, preempted,
// conflicted or failed, none; after one that changed nothing, a leader
// pauses as long as it took (Pace 1 by default), never longer than the
// interval, and not at all with a negative Pace.
func TestPauseBetweenCycles(t *testing.T) {
	st := hubtest.New(t).Store
	s := New(st, Config{Interval: time.Second})
	idle := Result{Waiting: 3}
	if got := s.pauseAfter(idle, nil, 80*time.Millisecond); got != 80*time.Millisecond {
		t.Errorf("pause after 80ms: %v", got)
	}
	if got := s.pauseAfter(idle, nil, 3*time.Second); got != time.Second {
		t.Errorf("pause after 3s: %v, want the interval", got)
	}
	for name, res := range map[string]Result{"placed": {Placed: []string{"a"}}, "preempted": {Preempted: []string{"b"}},
		"conflict": {Conflict: true}} {
		if got := s.pauseAfter(res, nil, time.Second); got != 0 {
			t.Errorf("pause after a cycle that %s: %v", name, got)
		}
	}
	if got := s.pauseAfter(idle, errors.New("store down"), time.Second); got != 0 {
		t.Errorf("pause after a failed cycle: %v", got)
	}
	if got := New(st, Config{Pace: 0.5}).pauseAfter(idle, nil, 80*time.Millisecond); got != 40*time.Millisecond {
		t.Errorf("pause after 80ms at Pace 0.5: %v", got)
	}
	if got := New(st, Config{Pace: -1}).pauseAfter(idle, nil, time.Second); got != 0 {
		t.Errorf("pause at Pace -1: %v", got)
	}
}
