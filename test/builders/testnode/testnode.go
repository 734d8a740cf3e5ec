// SPDX-License-Identifier: Apache-2.0

// Package testnode builds workload-cluster Kubernetes Nodes for tests, as
// KWOK or a real kubelet with the NVIDIA device plugin shows them:
// testnode.New("n1").GPUs(8).Label("nvidia.com/gpu.product", p).Obj().
package testnode

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceGPU is the device plugin's whole-GPU resource.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// Wrapper wraps a Node under construction.
type Wrapper struct{ n corev1.Node }

// New returns a Ready node with no labels and no resources.
func New(name string) *Wrapper {
	return &Wrapper{n: corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{},
			Allocatable: corev1.ResourceList{},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
}

// Obj returns the Node.
func (w *Wrapper) Obj() *corev1.Node { return &w.n }

// GPUs sets capacity and allocatable whole GPUs to n.
func (w *Wrapper) GPUs(n int64) *Wrapper { return w.Capacity(ResourceGPU, n, n) }

// Capacity sets a resource's capacity and allocatable.
func (w *Wrapper) Capacity(res corev1.ResourceName, capacity, allocatable int64) *Wrapper {
	w.n.Status.Capacity[res] = *resource.NewQuantity(capacity, resource.DecimalSI)
	w.n.Status.Allocatable[res] = *resource.NewQuantity(allocatable, resource.DecimalSI)
	return w
}

// Allocatable sets a resource's allocatable only.
func (w *Wrapper) Allocatable(res corev1.ResourceName, n int64) *Wrapper {
	w.n.Status.Allocatable[res] = *resource.NewQuantity(n, resource.DecimalSI)
	return w
}

// Label sets a label.
func (w *Wrapper) Label(k, v string) *Wrapper { w.n.Labels[k] = v; return w }

// NotReady marks the node's Ready condition False.
func (w *Wrapper) NotReady() *Wrapper {
	w.n.Status.Conditions[0].Status = corev1.ConditionFalse
	return w
}

// Cordon marks the node unschedulable.
func (w *Wrapper) Cordon() *Wrapper { w.n.Spec.Unschedulable = true; return w }

// Taint adds a NoSchedule taint.
func (w *Wrapper) Taint(key string) *Wrapper {
	w.n.Spec.Taints = append(w.n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	return w
}
