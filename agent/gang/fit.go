// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// reasonTerminating: the member fits once terminating pods on its node are
// gone; it is not reported unprepared but retried (until the hub's prepare
// deadline), so a preemptor waits out its victims' grace period.
const reasonTerminating = "WaitingForTerminatingPods"

// fit returns a reason and message when the member does not fit its target
// node. Every GPU resource the member asks for (whole GPUs and each MIG
// profile, counted by federation/inventory.PodGPURequests as the hub counts
// them) must be free there, counting the pods bound to the node and the
// prepared members targeting it; a node's DRA GPUs that serve nvidia.com/gpu
// (federation/inventory DRA.ExtendedGPUs) and its DRA MIG partitions that
// serve nvidia.com/mig-* (DRA.ExtendedMIG) count as allocatable.
func (g *Gate) fit(lp *corev1.Pod) (string, string, error) {
	target := lp.Annotations[v1alpha1.AnnotationTargetNode]
	if target == "" {
		return "", "", nil // no target node: the local scheduler decides
	}
	n, err := g.cache.Nodes().Get(target)
	if apierrors.IsNotFound(err) {
		return "NodeGone", fmt.Sprintf("node %s does not exist", target), nil
	}
	if err != nil {
		return "", "", err
	}
	if n.Spec.Unschedulable || !nodeReady(n) {
		return "NodeUnavailable", fmt.Sprintf("node %s is not ready or cordoned", target), nil
	}
	onNode, err := g.podsOn(target)
	if err != nil {
		return "", "", err
	}
	used, terminating := usage(lp, target, onNode)
	dra, err := g.cache.DRA()
	if err != nil {
		return "", "", err
	}
	// DRA GPUs behind a DeviceClass mapping nvidia.com/gpu serve the
	// member's request too; other claims' devices are in use.
	draAlloc, draUsed := dra.ExtendedGPUs(target)
	used[fedinv.ResourceGPU] += draUsed
	// So do DRA MIG partitions behind a class mapping nvidia.com/mig-*.
	draMIG := dra.ExtendedMIG(target)
	for r, m := range draMIG {
		used[r] += int64(m.Used)
	}
	need := memberNeed(lp)
	_, devices := lp.Annotations[v1alpha1.AnnotationDevices]
	wait := ""
	for _, r := range sortedResources(need) {
		alloc := n.Status.Allocatable.Name(corev1.ResourceName(r), "0").Value()
		switch {
		case r == fedinv.ResourceGPU && devices:
			alloc = draAlloc // a claim gets DRA devices only, never the device plugin's GPUs
		case r == fedinv.ResourceGPU:
			alloc += draAlloc
		default:
			alloc += int64(draMIG[r].Allocatable)
		}
		if used[r]+need[r] <= alloc {
			continue
		}
		if used[r]-terminating[r]+need[r] > alloc {
			return "InsufficientGPUs", fmt.Sprintf("node %s has %d of %d %s free, the member needs %d",
				target, max(0, alloc-used[r]), alloc, unit(r), need[r]), nil
		}
		if wait == "" {
			wait = fmt.Sprintf("node %s frees %d %s held by terminating pods (preemption victims)",
				target, terminating[r], unit(r))
		}
	}
	if wait != "" {
		return reasonTerminating, wait, nil
	}
	return "", "", nil
}

// usage sums, per GPU resource, what the pods on target other than lp hold:
// non-terminated pods bound to it, and prepared members not yet bound.
// terminating is the part held by pods being deleted.
func usage(lp *corev1.Pod, target string, onNode []*corev1.Pod) (used, terminating map[string]int64) {
	used, terminating = map[string]int64{}, map[string]int64{}
	for _, p := range onNode {
		if p.Namespace == lp.Namespace && p.Name == lp.Name {
			continue
		}
		if p.Spec.NodeName == target && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			for r, v := range fedinv.PodGPURequests(p) {
				used[r] += v
				if p.DeletionTimestamp != nil {
					terminating[r] += v
				}
			}
			continue
		}
		c := v1alpha1.PreparedCondition(p)
		if p.Spec.NodeName == "" && p.Annotations[v1alpha1.AnnotationTargetNode] == target &&
			c != nil && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
			for r, v := range memberNeed(p) { // prepared, not yet bound: holds its GPUs (and devices)
				used[r] += v
			}
		}
	}
	return used, terminating
}

// memberNeed is what a member's local pod asks for per GPU resource: its
// requests, and the devices of its DRA request (v1alpha1.AnnotationDevices)
// as whole GPUs. Once bound, a member's devices are counted by its
// allocated claim instead (the node's DRA used GPUs).
func memberNeed(p *corev1.Pod) map[string]int64 {
	need := fedinv.PodGPURequests(p)
	if d, ok, err := v1alpha1.MemberDevicesOf(p.Annotations); ok && err == nil {
		if need == nil {
			need = map[string]int64{}
		}
		need[fedinv.ResourceGPU] += int64(d.Count)
	}
	return need
}

// unit names a resource in messages: "GPUs", or the MIG resource.
func unit(r string) string {
	if r == fedinv.ResourceGPU {
		return "GPUs"
	}
	return r
}

func sortedResources(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for r, v := range m {
		if v > 0 {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
