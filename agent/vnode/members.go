// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"fmt"
	"sort"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// members are the hub pods bound to one virtual node, read from the pod
// controller's informer (filtered to spec.nodeName=<node>).
type members struct {
	node   string
	lister corelisters.PodLister
}

// list returns the hub pods bound to the node, sorted by namespace and name.
func (m *members) list() ([]*corev1.Pod, error) {
	all, err := m.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(all))
	for _, p := range all {
		if p.Spec.NodeName == m.node {
			out = append(out, p.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// placed reports whether p is a member Shoal placed: its dispatcher labels
// every member pod with its job (a pod someone else bound to the virtual
// node carries no such label).
func placed(p *corev1.Pod) bool { return p.Labels[v1alpha1.LabelJob] != "" }

// served returns the members the kubelet endpoint serves: the pods bound to
// the node that Shoal placed, sorted as list.
func (m *members) served() ([]*corev1.Pod, error) {
	pods, err := m.list()
	if err != nil {
		return nil, err
	}
	out := pods[:0]
	for _, p := range pods {
		if placed(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// check returns the hub pod ns/name, refusing (not found) a pod that is
// not bound to the node or that Shoal did not place.
func (m *members) check(ns, name string) (*corev1.Pod, error) {
	p, err := m.lister.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil || p.Spec.NodeName != m.node {
		return nil, errdefs.NotFound(fmt.Sprintf("pod %s/%s is not bound to node %s", ns, name, m.node))
	}
	if !placed(p) {
		return nil, errdefs.NotFound(fmt.Sprintf("pod %s/%s is not a member Shoal placed on node %s", ns, name, m.node))
	}
	return p, nil
}

// held returns what the node's non-terminated pods request of resource:
// the GPUs (or MIG slices) Shoal's members hold in the pool. It reads the
// cached pods in place (no copy, no order: it runs on every capacity
// update, over every member of the node).
func (m *members) held(resource corev1.ResourceName) int {
	pods, err := m.lister.List(labels.Everything())
	if err != nil {
		return 0
	}
	total := 0
	for _, p := range pods {
		if p.Spec.NodeName != m.node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		total += podRequest(p, resource)
	}
	return total
}

// podRequest is a pod's effective request of resource, as the scheduler
// counts it: the larger of the containers' sum and any one init container.
func podRequest(p *corev1.Pod, resource corev1.ResourceName) int {
	sum := 0
	for _, c := range p.Spec.Containers {
		sum += containerRequest(c, resource)
	}
	for _, c := range p.Spec.InitContainers {
		sum = max(sum, containerRequest(c, resource))
	}
	return sum
}

// containerRequest reads the request, or the limit when no request is set
// (extended resources default their request to the limit).
func containerRequest(c corev1.Container, resource corev1.ResourceName) int {
	if q, ok := c.Resources.Requests[resource]; ok {
		return int(q.Value())
	}
	if q, ok := c.Resources.Limits[resource]; ok {
		return int(q.Value())
	}
	return 0
}
