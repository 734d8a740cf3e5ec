// SPDX-License-Identifier: Apache-2.0

package nodehealth

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// TestGPUShortageCountsDRAMIG: a pod bound to a DRA-only node holding MIG
// partitions is not taken for a pod on lost GPUs while the node's mapped
// DRA partitions (free for nvidia.com/mig-* requests) cover it, and is once
// they do not.
func TestGPUShortageCountsDRAMIG(t *testing.T) {
	const r1g = "nvidia.com/mig-1g.10gb"
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{r1g: *resource.NewQuantity(3, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	n := testnode.New("n1").Obj()
	if short, msg := gpuShortage(n, []*corev1.Pod{p}, map[string]int64{fedinv.ResourceGPU: 0, r1g: 3}); len(short) != 0 {
		t.Errorf("3 DRA partitions free for 3 bound: short %v (%s)", short, msg)
	}
	if short, _ := gpuShortage(n, []*corev1.Pod{p}, map[string]int64{r1g: 2}); len(short) != 1 || short[0] != r1g {
		t.Errorf("2 DRA partitions free for 3 bound: short %v, want %s", short, r1g)
	}
}
