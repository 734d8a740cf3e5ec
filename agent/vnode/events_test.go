// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestQuietRecorderDropsOnlyVirtualKubeletSuccesses(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	q := quietRecorder{fake}
	p := &corev1.Pod{}
	q.Event(p, corev1.EventTypeNormal, "ProviderCreateSuccess", "Create pod in provider successfully")
	q.Eventf(p, corev1.EventTypeNormal, "ProviderUpdateSuccess", "%s", "Update pod in provider successfully")
	q.AnnotatedEventf(p, nil, corev1.EventTypeNormal, "ProviderDeleteSuccess", "%s", "Delete pod in provider successfully")
	q.Event(p, corev1.EventTypeWarning, "ProviderCreateFailed", "refused")
	q.Eventf(p, corev1.EventTypeNormal, "Other", "%d", 1)
	close(fake.Events)
	var got []string
	for e := range fake.Events {
		got = append(got, e)
	}
	want := []string{"Warning ProviderCreateFailed refused", "Normal Other 1"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("events passed on %q, want %q", got, want)
	}
}
