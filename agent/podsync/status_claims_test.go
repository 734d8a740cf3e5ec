// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestHubViewLeavesOutLocalClaims: the claims made from templates only the
// local pod names (a compute domain's IMEX channel) are not in the status
// the hub sees — its API server refuses a status naming claims the hub
// pod's spec lacks — while the rest of the status is.
func TestHubViewLeavesOutLocalClaims(t *testing.T) {
	lp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: "shoal-q-x",
		Annotations: map[string]string{v1alpha1.AnnotationHubUID: "uid-1", v1alpha1.AnnotationVirtualNode: "vn"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:            []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue}},
			ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "shoal-compute-domain", ResourceClaimName: ptr.To("m0-shoal-compute-domain-x")}}}}
	e := &entry{hub: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: "team", UID: "uid-1"}}, status: lp.Status}
	for name, p := range map[string]*corev1.Pod{"fromLocal": fromLocal(lp), "hubView": e.hubView()} {
		if len(p.Status.ResourceClaimStatuses) != 0 {
			t.Errorf("%s: resourceClaimStatuses %+v reach the hub", name, p.Status.ResourceClaimStatuses)
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.Conditions) != 1 {
			t.Errorf("%s: status %+v, want the phase and the Prepared condition kept", name, p.Status)
		}
	}
	if len(lp.Status.ResourceClaimStatuses) != 1 || len(e.status.ResourceClaimStatuses) != 1 {
		t.Error("the local pod's own status was changed")
	}
}
