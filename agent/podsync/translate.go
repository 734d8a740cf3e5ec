// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// LocalPod returns the local pod, in namespace (the queue's, localKey), for
// a hub pod bound to virtual node vnode. Placement is node-exact: a target-node annotation pins the local pod to
// that node (any topology domain the gang was placed in is implied by it);
// without one the local scheduler decides.
func LocalPod(hub *corev1.Pod, vnode, namespace string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: hub.Name, Namespace: namespace,
			Labels:      maps.Clone(hub.Labels),
			Annotations: maps.Clone(hub.Annotations),
		},
		Spec: *hub.Spec.DeepCopy(),
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	delete(p.Annotations, corev1.LastAppliedConfigAnnotation)
	p.Labels[v1alpha1.LabelManaged] = "true"
	p.Annotations[v1alpha1.AnnotationHubUID] = string(hub.UID)
	p.Annotations[v1alpha1.AnnotationHubNamespace] = hub.Namespace
	p.Annotations[v1alpha1.AnnotationVirtualNode] = vnode
	s := &p.Spec
	s.NodeName = ""
	s.Priority, s.PreemptionPolicy = nil, nil
	s.Tolerations = dropTolerations(s.Tolerations)
	s.NodeSelector = dropSelectors(s.NodeSelector, vnode)
	dropTokenVolume(s)
	if n := hub.Annotations[v1alpha1.AnnotationTargetNode]; n != "" {
		pinToNode(s, n)
	}
	if hub.Annotations[v1alpha1.AnnotationDevices] != "" {
		addClaim(p)
	}
	return p
}

// pinToNode ANDs metadata.name In [node] into every required node-affinity
// term (or makes it the only term).
func pinToNode(s *corev1.PodSpec, node string) {
	nsr := corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if s.Affinity == nil {
		s.Affinity = &corev1.Affinity{}
	}
	if s.Affinity.NodeAffinity == nil {
		s.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := s.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, nsr)
	}
}

func dropTolerations(ts []corev1.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		if t.Key == v1alpha1.TaintVirtual {
			continue
		}
		out = append(out, t)
	}
	return out
}

// dropSelectors removes node selectors that only virtual nodes carry.
func dropSelectors(sel map[string]string, vnode string) map[string]string {
	var out map[string]string
	for k, v := range sel {
		if strings.HasPrefix(k, v1alpha1.Prefix) || k == "type" && v == "virtual-kubelet" ||
			k == corev1.LabelHostname && v == vnode {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// dropTokenVolume removes the hub's projected service-account token volume
// (kube-api-access-*); the local cluster mounts its own.
func dropTokenVolume(s *corev1.PodSpec) {
	drop := map[string]bool{}
	var vols []corev1.Volume
	for _, v := range s.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			drop[v.Name] = true
			continue
		}
		vols = append(vols, v)
	}
	if len(drop) == 0 {
		return
	}
	s.Volumes = vols
	strip := func(cs []corev1.Container) {
		for i := range cs {
			var ms []corev1.VolumeMount
			for _, m := range cs[i].VolumeMounts {
				if !drop[m.Name] {
					ms = append(ms, m)
				}
			}
			cs[i].VolumeMounts = ms
		}
	}
	strip(s.Containers)
	strip(s.InitContainers)
}
