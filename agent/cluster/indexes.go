// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/kubeindex"
)

// Pod indexes of the cache.
const (
	// IndexNodeName indexes pods by spec.nodeName (bound pods only).
	IndexNodeName = "nodeName"
	// IndexTargetNode indexes unbound pods by their target-node annotation.
	IndexTargetNode = "targetNode"
	// IndexVirtualNode indexes the managed local pods by the virtual node
	// their hub pod is bound to.
	IndexVirtualNode = "virtualNode"
	// IndexJob indexes the pods carrying the job label by its value: the
	// members of a Shoal job, in whatever namespace.
	IndexJob = "job"
	// IndexHubPod indexes the managed local pods by their hub pod's
	// namespace and name ("<namespace>/<name>").
	IndexHubPod = "hubPod"
)

var podIndexers = cache.Indexers{
	IndexNodeName: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	},
	IndexTargetNode: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.Annotations[v1alpha1.AnnotationTargetNode] != "" {
			return []string{p.Annotations[v1alpha1.AnnotationTargetNode]}, nil
		}
		return nil, nil
	},
	IndexVirtualNode: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Labels[v1alpha1.LabelManaged] == "true" && p.Annotations[v1alpha1.AnnotationVirtualNode] != "" {
			return []string{p.Annotations[v1alpha1.AnnotationVirtualNode]}, nil
		}
		return nil, nil
	},
	IndexJob: kubeindex.Label(v1alpha1.LabelJob),
	IndexHubPod: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Labels[v1alpha1.LabelManaged] == "true" {
			return []string{hubPodKey(v1alpha1.HubNamespaceOf(p.Namespace, p.Annotations), p.Name)}, nil
		}
		return nil, nil
	},
}

// hubPodKey is IndexHubPod's value of hub pod ns/name.
func hubPodKey(ns, name string) string { return ns + "/" + name }

// stripManagedFields drops metadata.managedFields, which no agent part reads,
// to bound the cache's memory. (An update built from a cached copy leaves the
// server's managed fields as they are.)
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
