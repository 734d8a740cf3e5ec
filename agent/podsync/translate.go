package podsync

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// ErrBadTarget means a hub pod whose target annotations cannot be honoured.
var ErrBadTarget = errors.New("bad placement target")

// LocalPod returns the local pod for a hub pod bound to virtual node vnode.
func LocalPod(hub *corev1.Pod, vnode string, keys fedinv.LabelKeys) (*corev1.Pod, error) {
	req, err := targetRequirement(hub.Annotations, keys)
	if err != nil {
		return nil, err
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: hub.Name, Namespace: hub.Namespace,
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
	p.Labels[LabelManaged] = "true"
	p.Annotations[AnnotationHubUID] = string(hub.UID)
	p.Annotations[AnnotationVirtualNode] = vnode
	s := &p.Spec
	s.NodeName = ""
	s.Priority, s.PreemptionPolicy = nil, nil
	s.Tolerations = dropTolerations(s.Tolerations)
	s.NodeSelector = dropSelectors(s.NodeSelector, vnode)
	dropTokenVolume(s)
	if req != nil {
		addRequirement(s, *req)
	}
	return p, nil
}

type requirement struct {
	field bool
	key   string
	value string
}

// targetRequirement turns the target annotations into one node requirement.
func targetRequirement(ann map[string]string, keys fedinv.LabelKeys) (*requirement, error) {
	if n := ann[AnnotationTargetNode]; n != "" {
		return &requirement{field: true, key: "metadata.name", value: n}, nil
	}
	d := ann[AnnotationTargetDomain]
	if d == "" || d == string(fedinv.LevelCluster) || d == "cluster" {
		return nil, nil
	}
	kind, value, ok := strings.Cut(d, ":")
	if !ok {
		kind, value = ann[AnnotationTargetLevel], d
	}
	var key string
	switch kind {
	case "node":
		return &requirement{field: true, key: "metadata.name", value: value}, nil
	case "clique", string(fedinv.LevelNVLink):
		key = LabelClique
	case string(fedinv.LevelRack):
		key = keys.Rack
	case string(fedinv.LevelBlock):
		key = keys.Block
	case "zone":
		key = keys.Zone
	}
	if key == "" || value == "" {
		return nil, fmt.Errorf("%w: domain %q (level %q)", ErrBadTarget, d, ann[AnnotationTargetLevel])
	}
	return &requirement{key: key, value: value}, nil
}

// addRequirement ANDs the requirement into every required node-affinity term
// (or makes it the only term).
func addRequirement(s *corev1.PodSpec, r requirement) {
	nsr := corev1.NodeSelectorRequirement{Key: r.key, Operator: corev1.NodeSelectorOpIn, Values: []string{r.value}}
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
		if r.field {
			terms[i].MatchFields = append(terms[i].MatchFields, nsr)
		} else {
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, nsr)
		}
	}
}

func dropTolerations(ts []corev1.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		if t.Key == LabelVirtual {
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
		if strings.HasPrefix(k, "shoal.dev/") || k == "type" && v == "virtual-kubelet" ||
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
