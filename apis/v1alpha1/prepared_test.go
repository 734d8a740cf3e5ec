// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestPreparedCondition: a local pod's status condition wins; a pod
// created prepared stands for True since its creation; neither: nil.
func TestPreparedCondition(t *testing.T) {
	created := metav1.NewTime(time.Unix(1000, 0))
	marked := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created,
			Annotations: map[string]string{v1alpha1.AnnotationPrepared: "True"}}}
	}
	if c := v1alpha1.PreparedCondition(&corev1.Pod{}); c != nil {
		t.Fatalf("an unprepared pod: %+v", c)
	}
	c := v1alpha1.PreparedCondition(marked())
	if c == nil || c.Type != v1alpha1.PodConditionPrepared || c.Status != corev1.ConditionTrue ||
		c.Reason != v1alpha1.ReasonFits || !c.LastTransitionTime.Equal(&created) {
		t.Fatalf("a pod created prepared: %+v", c)
	}
	refused := marked()
	refused.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse},
		{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonStaleEpoch}}
	if c := v1alpha1.PreparedCondition(refused); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("the status condition did not win: %+v", c)
	}
	other := marked()
	other.Annotations[v1alpha1.AnnotationPrepared] = "False"
	if c := v1alpha1.PreparedCondition(other); c != nil {
		t.Fatalf("an annotation other than True: %+v", c)
	}
}

// TestFormatAndParseMembers: indices in any order, repeated, come back
// sorted and once, as ranges; malformed reports are refused.
func TestFormatAndParseMembers(t *testing.T) {
	for _, tc := range []struct {
		in   []int32
		want string
	}{
		{nil, ""},
		{[]int32{0}, "0"},
		{[]int32{3, 1, 2, 2, 0, 7, 9, 8, 5}, "0-3,5,7-9"},
		{[]int32{255, 0, 1, 128, 129, 130}, "0-1,128-130,255"},
	} {
		got := v1alpha1.FormatMembers(tc.in)
		if got != tc.want {
			t.Fatalf("FormatMembers(%v) = %q, want %q", tc.in, got, tc.want)
		}
		var back []int32
		if err := v1alpha1.ParseMembers(got, 1000, func(i int32) { back = append(back, i) }); err != nil {
			t.Fatal(err)
		}
		if v1alpha1.FormatMembers(back) != tc.want || len(back) != len(slices.Compact(slices.Sorted(slices.Values(tc.in)))) {
			t.Fatalf("ParseMembers(%q) = %v", got, back)
		}
	}
	for _, bad := range []string{"x", "1-", "-1", "3-1", "1,,2", "0-5000", "1.5", "99999999999"} {
		if err := v1alpha1.ParseMembers(bad, 1000, func(int32) {}); err == nil {
			t.Fatalf("ParseMembers(%q) accepted", bad)
		}
	}
}
