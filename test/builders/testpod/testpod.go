// SPDX-License-Identifier: Apache-2.0

// Package testpod builds Kubernetes Pods for tests:
// testpod.New("p").Node("n1").GPUs(4).Phase(corev1.PodRunning).Obj().
package testpod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceGPU is the device plugin's whole-GPU resource.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// Wrapper wraps a Pod under construction.
type Wrapper struct{ p corev1.Pod }

// New returns a Pod with no containers, in no namespace.
func New(name string) *Wrapper {
	return &Wrapper{p: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns the Pod.
func (w *Wrapper) Obj() *corev1.Pod { return &w.p }

// Namespace sets the namespace.
func (w *Wrapper) Namespace(ns string) *Wrapper { w.p.Namespace = ns; return w }

// Node binds the pod to a node.
func (w *Wrapper) Node(n string) *Wrapper { w.p.Spec.NodeName = n; return w }

// Phase sets the status phase.
func (w *Wrapper) Phase(p corev1.PodPhase) *Wrapper { w.p.Status.Phase = p; return w }

// Label sets a label.
func (w *Wrapper) Label(k, v string) *Wrapper {
	if w.p.Labels == nil {
		w.p.Labels = map[string]string{}
	}
	w.p.Labels[k] = v
	return w
}

// Annotation sets an annotation.
func (w *Wrapper) Annotation(k, v string) *Wrapper {
	if w.p.Annotations == nil {
		w.p.Annotations = map[string]string{}
	}
	w.p.Annotations[k] = v
	return w
}

// Container appends a container limited to res (resource name → count).
func (w *Wrapper) Container(name string, res map[corev1.ResourceName]int64) *Wrapper {
	w.p.Spec.Containers = append(w.p.Spec.Containers, container(name, res))
	return w
}

// InitContainer appends an init container limited to res.
func (w *Wrapper) InitContainer(name string, res map[corev1.ResourceName]int64) *Wrapper {
	w.p.Spec.InitContainers = append(w.p.Spec.InitContainers, container(name, res))
	return w
}

// GPUs appends a container limited to n whole GPUs.
func (w *Wrapper) GPUs(n int64) *Wrapper {
	return w.Container("c", map[corev1.ResourceName]int64{ResourceGPU: n})
}

func container(name string, res map[corev1.ResourceName]int64) corev1.Container {
	c := corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}
	for k, v := range res {
		c.Resources.Limits[k] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return c
}

// IPs sets the pod IP and the host (node) IP in the status.
func (w *Wrapper) IPs(pod, host string) *Wrapper {
	w.p.Status.PodIP, w.p.Status.HostIP = pod, host
	return w
}

// HostNetwork runs the pod in its node's network namespace.
func (w *Wrapper) HostNetwork() *Wrapper { w.p.Spec.HostNetwork = true; return w }
