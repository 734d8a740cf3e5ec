// SPDX-License-Identifier: Apache-2.0

package nodehealth

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// failure is what is wrong with a node now, for some of its members.
type failure struct {
	reason, message string
	// resources, for a GPU loss, are the GPU resources short on the node:
	// only members asking for one of them fail. Empty: every member fails.
	resources []string
}

// nodeFailures returns what is wrong with node n (nil: deleted), given the
// pods bound to it. The result is keyed by a stable kind, so that the grace
// of each failure is counted from when that one first appeared.
func (w *Watcher) nodeFailures(n *corev1.Node, bound []*corev1.Pod) map[string]failure {
	out := map[string]failure{}
	if n == nil {
		out["deleted"] = failure{reason: v1alpha1.ReasonNodeNotReady, message: "the node was deleted"}
		return out
	}
	if st := readyStatus(n); st != corev1.ConditionTrue {
		out["notReady"] = failure{reason: v1alpha1.ReasonNodeNotReady,
			message: fmt.Sprintf("node %s is not Ready (Ready=%s)", n.Name, st)}
	}
	for _, t := range n.Spec.Taints {
		if slices.Contains(w.cfg.Taints, t.Key) {
			out["taint/"+t.Key] = failure{reason: v1alpha1.ReasonGPUUnhealthy,
				message: fmt.Sprintf("node %s has the GPU failure taint %s", n.Name, t.Key)}
		}
	}
	for _, c := range n.Status.Conditions {
		if slices.Contains(w.cfg.Conditions, string(c.Type)) && c.Status == corev1.ConditionTrue {
			out["condition/"+string(c.Type)] = failure{reason: v1alpha1.ReasonGPUUnhealthy,
				message: fmt.Sprintf("node %s has the GPU failure condition %s: %s", n.Name, c.Type, c.Message)}
		}
	}
	dra, err := w.cache.DRA()
	if err != nil {
		klog.Background().Error(err, "DRA objects unreadable, GPU loss check skipped", "node", n.Name)
		return out
	}
	draAlloc, draUsed := dra.ExtendedGPUs(n.Name)
	draFree := map[string]int64{fedinv.ResourceGPU: max(0, draAlloc-draUsed)}
	for r, m := range dra.ExtendedMIG(n.Name) {
		draFree[r] = int64(m.Free())
	}
	if short, msg := gpuShortage(n, bound, draFree); len(short) > 0 {
		out["gpus/"+strings.Join(short, ",")] = failure{reason: v1alpha1.ReasonGPUUnhealthy, message: msg, resources: short}
	}
	return out
}

// gpuShortage returns the GPU resources whose allocatable on n is below
// what the non-terminated pods bound to n hold; draFree are, per resource,
// the node's DRA GPUs free for nvidia.com/gpu requests and its DRA MIG
// partitions free for nvidia.com/mig-* requests (in no other claim), part
// of its allocatable.
func gpuShortage(n *corev1.Node, bound []*corev1.Pod, draFree map[string]int64) ([]string, string) {
	used := map[string]int64{}
	for _, p := range bound {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for r, v := range fedinv.PodGPURequests(p) {
			used[r] += v
		}
	}
	var short, parts []string
	for r, v := range used {
		alloc := n.Status.Allocatable.Name(corev1.ResourceName(r), "0").Value() + draFree[r]
		if v > 0 && alloc < v {
			short = append(short, r)
			parts = append(parts, fmt.Sprintf("%s: %d allocatable, %d bound", r, alloc, v))
		}
	}
	sort.Strings(short)
	sort.Strings(parts)
	if len(short) == 0 {
		return nil, ""
	}
	return short, fmt.Sprintf("node %s lost GPUs its pods are bound to (unhealthy, removed by the device plugin): %s",
		n.Name, strings.Join(parts, "; "))
}

// applies reports whether failure f stops member p.
func (f failure) applies(p *corev1.Pod) bool {
	if len(f.resources) == 0 {
		return true
	}
	if p.Spec.NodeName == "" {
		return false // not bound: holds no device
	}
	need := fedinv.PodGPURequests(p)
	for _, r := range f.resources {
		if need[r] > 0 {
			return true
		}
	}
	return false
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// isMember reports whether a local pod is a live gang member the agent
// manages.
func isMember(p *corev1.Pod) bool {
	return p.Labels[v1alpha1.LabelManaged] == "true" && p.Labels[v1alpha1.LabelJob] != "" &&
		p.Annotations[v1alpha1.AnnotationEpoch] != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
