// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func placedJob() *v1alpha1.Job {
	j := &v1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1, ResourceVersion: "7"}}
	j.Status.Phase = v1alpha1.JobPlaced
	j.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionAdmitted, Status: metav1.ConditionTrue,
		Reason: "Queued", LastTransitionTime: metav1.NewTime(t0)}}
	return j
}

// TestTransitionKeepsToItsConditions: a transition that touches a
// condition type it does not declare is refused, whether it sets, changes
// or removes it.
func TestTransitionKeepsToItsConditions(t *testing.T) {
	for name, apply := range map[string]func(*v1alpha1.Job){
		"sets": func(j *v1alpha1.Job) {
			meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionRunning, Status: metav1.ConditionTrue, Reason: "x"})
		},
		"changes": func(j *v1alpha1.Job) { j.Status.Conditions[0].Message = "changed" },
		"removes": func(j *v1alpha1.Job) { meta.RemoveStatusCondition(&j.Status.Conditions, v1alpha1.JobConditionAdmitted) },
	} {
		t.Run(name, func(t *testing.T) {
			tr := Transition{Name: "rogue", Owns: []string{v1alpha1.JobConditionPlaced},
				apply: func(j *v1alpha1.Job) bool { apply(j); return true }}
			if _, _, err := next(placedJob(), tr); !errors.Is(err, ErrNotOwned) {
				t.Fatalf("err = %v, want ErrNotOwned", err)
			}
		})
	}
	if _, changed, err := next(placedJob(), Explain("InsufficientGPUs", "3 of 2", t0)); err != nil || !changed {
		t.Fatalf("a transition within its conditions: changed %v, err %v", changed, err)
	}
}

// TestDecideComputesTheCondition: the Dispatched condition follows the
// typed decision; the abort reason is a field, and the restart is counted.
func TestDecideComputesTheCondition(t *testing.T) {
	at := metav1.NewTime(t0)
	for _, tc := range []struct {
		phase    v1alpha1.DispatchPhase
		reason   string
		status   metav1.ConditionStatus
		message  string
		restarts int32
	}{
		{v1alpha1.DispatchPreparing, "", metav1.ConditionUnknown, "m", 0},
		{v1alpha1.DispatchCommitted, "", metav1.ConditionTrue, "m", 0},
		{v1alpha1.DispatchAborting, "PrepareTimeout", metav1.ConditionFalse, "PrepareTimeout: m", 0},
		{v1alpha1.DispatchRestarting, "", metav1.ConditionFalse, "m", 1},
		{v1alpha1.DispatchFailing, "", metav1.ConditionFalse, "m", 0},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			d := v1alpha1.DispatchStatus{Epoch: 3, Phase: tc.phase, Reason: tc.reason, Message: "m", Time: &at}
			j, _, err := next(placedJob(), Decide(Decision{Dispatch: d}))
			if err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionDispatched)
			if c == nil || c.Status != tc.status || c.Reason != string(tc.phase) || c.Message != tc.message {
				t.Fatalf("condition %+v", c)
			}
			if got := j.Status.Dispatch; got == nil || *got != d || j.Status.Restarts != tc.restarts {
				t.Fatalf("dispatch %+v restarts %d", got, j.Status.Restarts)
			}
		})
	}
}

// TestRequeueBacksOffPerAbort: each abort doubles the delay, up to the cap.
func TestRequeueBacksOffPerAbort(t *testing.T) {
	j := placedJob()
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second} {
		var err error
		r := Requeue{Reason: "PrepareFailed", Message: "m", Backoff: 2 * time.Second, MaxBackoff: 5 * time.Second, At: t0}
		if j, _, err = next(j, r.Transition()); err != nil {
			t.Fatal(err)
		}
		if nb, ok := NotBefore(j); !ok || nb.Sub(t0) != want || j.Status.Phase != v1alpha1.JobPending || j.Status.Dispatch != nil {
			t.Fatalf("abort %d: not before %v (%v), want +%s; phase %s", i+1, nb, ok, want, j.Status.Phase)
		}
	}
}

// TestDispatchOfAnOlderHub: a job whose decision an older hub recorded only
// as the Dispatched condition reads as that decision for its epoch.
func TestDispatchOfAnOlderHub(t *testing.T) {
	j := placedJob()
	if DispatchOf(j) != nil {
		t.Fatal("a job never dispatched has a decision")
	}
	j.Status.Epoch = 4
	meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionDispatched,
		Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCommitted, Message: "m", LastTransitionTime: metav1.NewTime(t0)})
	d := DispatchOf(j)
	if d == nil || d.Epoch != 4 || d.Phase != v1alpha1.DispatchCommitted || !d.Time.Time.Equal(t0) {
		t.Fatalf("legacy decision %+v", d)
	}
	typed := &v1alpha1.DispatchStatus{Epoch: 4, Phase: v1alpha1.DispatchAborting, Reason: "PrepareTimeout"}
	j.Status.Dispatch = typed
	if DispatchOf(j) != typed {
		t.Fatal("status.dispatch not preferred")
	}
}
