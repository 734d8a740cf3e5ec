// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestReportedPrepared: a report names members of its carrier's own job,
// epoch and cluster only; a member's own hub pod wins over the report
// (Prepared False, a phase); members no report names stay waiting.
func TestReportedPrepared(t *testing.T) {
	pod := func(index int, cluster, epoch string, conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-e" + epoch + "-" + strconv.Itoa(index),
			Labels: map[string]string{v1alpha1.LabelJob: "j", v1alpha1.LabelMember: strconv.Itoa(index),
				v1alpha1.LabelCluster: cluster, v1alpha1.LabelEpoch: epoch}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds}}
	}
	report := func(msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: v1alpha1.PodConditionPreparedMembers, Status: corev1.ConditionTrue,
			Reason: v1alpha1.ReasonHeld, Message: msg}
	}
	refused := corev1.PodCondition{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionFalse, Reason: "InsufficientGPUs"}
	failed := pod(3, "a", "1")
	failed.Status.Phase = corev1.PodFailed
	pods := []*corev1.Pod{
		// a's carrier names 0-4 and 7 (b's), and 9 (no such member).
		pod(1, "a", "1", report("0-4,7,9")), pod(0, "a", "1"), pod(2, "a", "1", refused), failed, pod(4, "a", "1"),
		pod(5, "a", "1"), // named by no report
		pod(7, "b", "1"),
		// b's carrier of another epoch names 8: not this epoch's.
		pod(6, "b", "2", report("8")), pod(8, "b", "1"),
	}
	reported := reportedPrepared(pods)
	want := map[string]memberState{"j-e1-1": memberPrepared, "j-e1-0": memberPrepared, "j-e1-4": memberPrepared,
		"j-e1-2": memberUnprepared, "j-e1-3": memberFailed, "j-e1-5": memberWaiting, "j-e1-7": memberWaiting,
		"j-e2-6": memberWaiting, "j-e1-8": memberWaiting}
	for _, p := range pods {
		if st, _ := stateWith(p, reported); st != want[p.Name] {
			t.Errorf("%s: state %d, want %d", p.Name, st, want[p.Name])
		}
	}
	if got := reportedPrepared([]*corev1.Pod{pod(0, "a", "1", report("0-x")), pod(1, "a", "1")}); len(got) != 0 {
		t.Errorf("a malformed report counted %v", got)
	}
}
