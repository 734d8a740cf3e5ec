// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// localNS is the workload-cluster namespace of hubPod's queue, team.
var localNS = v1alpha1.LocalMemberNamespace("team")

// hubNS is the hub namespace of hubPod: its cluster's, eu1.
var hubNS = v1alpha1.ClusterNamespace("eu1")

// hubPod is a hub member pod p of queue team, in its cluster's hub
// namespace, with annotations ann besides the queue.
func hubPod(ann map[string]string) *corev1.Pod {
	prio := int32(100)
	a := map[string]string{v1alpha1.AnnotationQueue: "team"}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: hubNS, UID: "hub-uid", Annotations: a,
			Labels: map[string]string{"app": "x"}, OwnerReferences: []metav1.OwnerReference{{Name: "o"}}},
		Spec: corev1.PodSpec{
			NodeName: "shoal-eu1-h100", Priority: &prio,
			NodeSelector: map[string]string{v1alpha1.LabelCluster: "eu1", "nvidia.com/gpu.product": "H100", "type": "virtual-kubelet"},
			Tolerations:  []corev1.Toleration{{Key: v1alpha1.TaintVirtual, Operator: corev1.TolerationOpExists}, {Key: "gpu", Operator: corev1.TolerationOpExists}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde"}, {Name: "data"}}}},
		},
	}
}

func TestLocalPod(t *testing.T) {
	tests := []struct {
		name      string
		ann       map[string]string
		wantField string // metadata.name value
		wantKey   string
		wantValue string
	}{
		{"no target", nil, "", "", ""},
		{"target node", map[string]string{v1alpha1.AnnotationTargetNode: "gpu-7"}, "gpu-7", "", ""},
		{"target level is informational", map[string]string{v1alpha1.AnnotationTargetNode: "gpu-7", v1alpha1.AnnotationTargetLevel: "rack"},
			"gpu-7", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := LocalPod(hubPod(tt.ann), "shoal-eu1-h100", localNS)
			s := p.Spec
			if s.NodeName != "" || s.Priority != nil || len(p.OwnerReferences) != 0 || p.UID != "" {
				t.Errorf("hub-only fields kept: %+v", p)
			}
			if len(s.Tolerations) != 1 || s.Tolerations[0].Key != "gpu" {
				t.Errorf("tolerations = %v", s.Tolerations)
			}
			if len(s.NodeSelector) != 1 || s.NodeSelector["nvidia.com/gpu.product"] != "H100" {
				t.Errorf("nodeSelector = %v", s.NodeSelector)
			}
			if len(s.Volumes) != 1 || len(s.Containers[0].VolumeMounts) != 1 {
				t.Errorf("token volume kept: %v %v", s.Volumes, s.Containers[0].VolumeMounts)
			}
			if p.Labels[v1alpha1.LabelManaged] != "true" || p.Labels["app"] != "x" || p.Annotations[v1alpha1.AnnotationHubUID] != "hub-uid" ||
				p.Annotations[v1alpha1.AnnotationVirtualNode] != "shoal-eu1-h100" ||
				p.Namespace != localNS || p.Annotations[v1alpha1.AnnotationHubNamespace] != hubNS {
				t.Errorf("metadata = %+v", p.ObjectMeta)
			}
			if p.Annotations[v1alpha1.AnnotationTargetLevel] != tt.ann[v1alpha1.AnnotationTargetLevel] {
				t.Errorf("target level annotation = %q", p.Annotations[v1alpha1.AnnotationTargetLevel])
			}
			var field, k, v string
			if a := s.Affinity; a != nil {
				term := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
				if len(term.MatchFields) > 0 {
					field = term.MatchFields[0].Values[0]
				}
				if len(term.MatchExpressions) > 0 {
					k, v = term.MatchExpressions[0].Key, term.MatchExpressions[0].Values[0]
				}
			}
			if field != tt.wantField || k != tt.wantKey || v != tt.wantValue {
				t.Errorf("affinity field=%q key=%q value=%q, want %q %q %q", field, k, v, tt.wantField, tt.wantKey, tt.wantValue)
			}
		})
	}
}

func TestAffinityIsANDedIntoExistingTerms(t *testing.T) {
	hub := hubPod(map[string]string{v1alpha1.AnnotationTargetNode: "n1"})
	hub.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "a", Operator: corev1.NodeSelectorOpExists}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "b", Operator: corev1.NodeSelectorOpExists}}},
		}}}}
	p := LocalPod(hub, "v", localNS)
	for i, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "n1" {
			t.Errorf("term %d = %+v", i, term)
		}
	}
	if len(hub.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields) != 0 {
		t.Error("the hub pod was mutated")
	}
}
