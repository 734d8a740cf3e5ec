// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestCachedFormKeepsWhatDispatchReads: a cached member pod keeps its
// metadata (but managed fields), its status, and of its spec the node and
// host networking its address depends on.
func TestCachedFormKeepsWhatDispatchReads(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train-0", Labels: map[string]string{v1alpha1.LabelJob: "train"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "shoal-hub"}}},
		Spec: corev1.PodSpec{NodeName: "shoal-eu1-h100", HostNetwork: true,
			Containers: []corev1.Container{{Name: "c", Image: "trainer:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.7", PodIP: "10.0.0.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	o, err := cachedForm(p)
	if err != nil {
		t.Fatal(err)
	}
	c := o.(*corev1.Pod)
	if c.ManagedFields != nil || len(c.Spec.Containers) != 0 {
		t.Fatalf("cached pod keeps managed fields %v or containers %v", c.ManagedFields, c.Spec.Containers)
	}
	if c.Spec.NodeName != "shoal-eu1-h100" || !c.Spec.HostNetwork || c.Labels[v1alpha1.LabelJob] != "train" {
		t.Fatalf("cached pod lost what dispatch reads: %+v", c)
	}
	if memberAddress(c) != "10.0.0.7" || !podReady(c) {
		t.Fatalf("address %q ready %v, want 10.0.0.7 true", memberAddress(c), podReady(c))
	}
}
