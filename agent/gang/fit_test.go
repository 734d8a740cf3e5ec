// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

const mig = "nvidia.com/mig-1g.10gb"

func limits(kv map[string]int64) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for k, v := range kv {
		l[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return corev1.ResourceRequirements{Limits: l}
}

// member is a gang member on n1 asking for res in one container.
func member(name string, res map[string]int64) *corev1.Pod {
	p := hubPod(name, "1", "")
	p.Spec.Containers[0].Resources = limits(res)
	return p
}

// prepareMember creates the local pod of hub as the pod syncer does
// (mutated by the gate), prepares it and returns its last condition.
func prepareMember(ctx context.Context, t *testing.T, g *gang.Gate, local *fake.Clientset, hub *corev1.Pod) corev1.PodCondition {
	t.Helper()
	lp := hub.DeepCopy()
	if err := g.Mutate(hub, lp); err != nil {
		t.Fatal(err)
	}
	lp, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Prepare(ctx, lp); err != nil {
		t.Fatal(err)
	}
	lp, _ = local.CoreV1().Pods("ns").Get(ctx, lp.Name, metav1.GetOptions{})
	return lp.Status.Conditions[len(lp.Status.Conditions)-1]
}

// migNode is n1 with 8 whole GPUs and 7 MIG 1g.10gb slices.
func migNode() *corev1.Node {
	n := gpuNode()
	n.Status.Allocatable[mig] = resource.MustParse("7")
	return n
}

// bound is a running local pod on n1 holding res.
func bound(name string, res map[string]int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: limits(res)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	return p
}

// TestFitCountsEveryGPUResource: the fit check counts whole GPUs and MIG
// slices, init containers included, with federation/inventory's rule.
func TestFitCountsEveryGPUResource(t *testing.T) {
	bigInit := member("m0", map[string]int64{fedinv.ResourceGPU: 1})
	bigInit.Spec.InitContainers = []corev1.Container{{Name: "warmup", Resources: limits(map[string]int64{fedinv.ResourceGPU: 8})}}
	preparedMIG := member("p0", map[string]int64{mig: 3})
	preparedMIG.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
	preparedMIG.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue}}
	for name, tc := range map[string]struct {
		member *corev1.Pod
		others []runtime.Object
		reason string
	}{
		"MIG member fits": {member: member("m0", map[string]int64{mig: 2}),
			others: []runtime.Object{bound("x", map[string]int64{mig: 5})}, reason: "Fits"},
		"MIG member does not fit": {member: member("m0", map[string]int64{mig: 3}),
			others: []runtime.Object{bound("x", map[string]int64{mig: 5})}, reason: "InsufficientGPUs"},
		"MIG slices held by a prepared member": {member: member("m0", map[string]int64{mig: 5}),
			others: []runtime.Object{preparedMIG}, reason: "InsufficientGPUs"},
		"MIG member on a node without MIG": {member: member("m0", map[string]int64{"nvidia.com/mig-3g.40gb": 1}),
			reason: "InsufficientGPUs"},
		"whole GPUs busy, MIG free": {member: member("m0", map[string]int64{mig: 7}),
			others: []runtime.Object{bound("x", map[string]int64{fedinv.ResourceGPU: 8})}, reason: "Fits"},
		"big init container does not fit": {member: bigInit,
			others: []runtime.Object{bound("x", map[string]int64{fedinv.ResourceGPU: 1})}, reason: "InsufficientGPUs"},
		"big init container fits": {member: bigInit, reason: "Fits"},
		"init container of a bound pod counts": {member: member("m0", map[string]int64{fedinv.ResourceGPU: 2}),
			others: []runtime.Object{func() *corev1.Pod {
				p := bound("x", map[string]int64{fedinv.ResourceGPU: 1})
				p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: limits(map[string]int64{fedinv.ResourceGPU: 7})}}
				return p
			}()}, reason: "InsufficientGPUs"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			g, local := newGate(t, append([]runtime.Object{migNode()}, tc.others...)...)
			c := prepareMember(ctx, t, g, local, tc.member)
			if c.Type != v1alpha1.PodConditionPrepared || c.Reason != tc.reason {
				t.Fatalf("condition %+v, want reason %s", c, tc.reason)
			}
			if (c.Status == corev1.ConditionTrue) != (tc.reason == "Fits") {
				t.Fatalf("condition status %s with reason %s", c.Status, c.Reason)
			}
		})
	}
}
