// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

func TestMeaningOfMasksCountsNotNames(t *testing.T) {
	same := [][2]string{
		{"needs 32×8 GPUs; 120 are free on matching nodes", "needs 32×8 GPUs; 118 are free on matching nodes"},
		{"needs 17×8 GPUs in one cluster; the largest free cluster has 16×8 (h100-1)",
			"needs 17×8 GPUs in one cluster; the largest free cluster has 3×8 (h100-1)"},
		{"queue research would hold 24 h100 GPUs, quota nominal 16 + borrowing 0",
			"queue research would hold 40 h100 GPUs, quota nominal 16 + borrowing 0"},
		{"needs 4×8 GPUs; no schedulable node matches its products, clusters, MIG profile and tolerations (3 match, 3 cordoned or not ready)",
			"needs 4×8 GPUs; no schedulable node matches its products, clusters, MIG profile and tolerations (9 match, 9 cordoned or not ready)"},
	}
	for _, p := range same {
		if a, b := meaningOf(p[0]), meaningOf(p[1]); a != b {
			t.Errorf("%q and %q differ in meaning: %q != %q", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{"needs 32×8 GPUs in one rack; the largest free rack has 12×8 (eu1/rack:r7)",
			"needs 32×8 GPUs in one rack; the largest free rack has 12×8 (eu1/rack:r9)"},
		{"the largest free cluster has 16×8 (h100-1)", "the largest free cluster has 16×8 (h100-2)"},
		{"queue team2 would hold 8 h100 GPUs", "queue team3 would hold 8 h100 GPUs"},
		{"would hold 8 h100 GPUs", "would hold 8 a100-80gb GPUs"},
		{"needs 4×8 GPUs; 3 are free on matching nodes",
			"needs 4×8 GPUs; 3 are free on matching nodes but only 1 members of 8 GPUs fit on single nodes"},
	}
	for _, p := range differ {
		if meaningOf(p[0]) == meaningOf(p[1]) {
			t.Errorf("%q and %q mean the same (%q)", p[0], p[1], meaningOf(p[0]))
		}
	}
	if got, want := meaningOf("needs 32×8 GPUs; 120 are free"), "needs #×# GPUs; # are free"; got != want {
		t.Errorf("meaningOf = %q, want %q", got, want)
	}
}

// TestPendingFormExplains: a job's form carries its explanation's reason
// and meaning interned, and answers for a wait with the same reason and
// a message of the same meaning (counts masked), not for another reason
// or meaning, nor when the job has no explanation.
func TestPendingFormExplains(t *testing.T) {
	j := testjob.New("a").Queue("q").Members(4).GPUs(8).Obj()
	meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced, Status: metav1.ConditionFalse,
		Reason: string(placement.ReasonInsufficientGPUs), Message: "needs 4×8 GPUs; 3 are free on matching nodes"})
	f := pendingFormOf(j)
	m := &meaningMemo{}
	for _, c := range []struct {
		why  placement.Unschedulable
		want bool
	}{
		{placement.Unschedulable{Reason: placement.ReasonInsufficientGPUs, Message: "needs 4×8 GPUs; 3 are free on matching nodes"}, true},
		{placement.Unschedulable{Reason: placement.ReasonInsufficientGPUs, Message: "needs 4×8 GPUs; 17 are free on matching nodes"}, true},
		{placement.Unschedulable{Reason: placement.ReasonFragmented, Message: "needs 4×8 GPUs; 3 are free on matching nodes"}, false},
		{placement.Unschedulable{Reason: placement.ReasonInsufficientGPUs, Message: "needs 4×8 GPUs in one rack; 3 are free"}, false},
	} {
		for range 2 { // asked again: the memo's last answer
			if got := f.explains(&c.why, m); got != c.want {
				t.Errorf("explains(%s %q) = %v, want %v", c.why.Reason, c.why.Message, got, c.want)
			}
		}
	}
	plain := pendingFormOf(testjob.New("b").Queue("q").Members(4).GPUs(8).Obj())
	if plain.explains(&placement.Unschedulable{Reason: placement.ReasonInsufficientGPUs}, m) {
		t.Error("a job with no explanation explains a wait")
	}
}
