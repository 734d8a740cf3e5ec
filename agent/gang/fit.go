package gang

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// reasonTerminating: the member fits once terminating pods on its node are
// gone; it is not reported unprepared but retried (until the hub's prepare
// deadline), so a preemptor waits out its victims' grace period.
const reasonTerminating = "WaitingForTerminatingPods"

// fit returns a reason and message when the member does not fit its target node.
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
	alloc := n.Status.Allocatable.Name(fedinv.ResourceGPU, "0").Value()
	onNode, err := g.podsOn(target)
	if err != nil {
		return "", "", err
	}
	var used, terminating int64
	for _, p := range onNode {
		if p.Namespace == lp.Namespace && p.Name == lp.Name {
			continue
		}
		if p.Spec.NodeName == target && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			used += gpus(p)
			if p.DeletionTimestamp != nil {
				terminating += gpus(p)
			}
			continue
		}
		c := preparedCondition(p)
		if p.Spec.NodeName == "" && p.Annotations[v1alpha1.AnnotationTargetNode] == target &&
			c != nil && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
			used += gpus(p) // prepared, not yet bound: holds its GPUs
		}
	}
	need := gpus(lp)
	if used+need > alloc && used-terminating+need <= alloc {
		return reasonTerminating, fmt.Sprintf("node %s frees %d GPUs held by terminating pods (preemption victims)",
			target, terminating), nil
	}
	if used+need > alloc {
		return "InsufficientGPUs", fmt.Sprintf("node %s has %d of %d GPUs free, the member needs %d",
			target, max(0, alloc-used), alloc, need), nil
	}
	return "", "", nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gpus is the pod's whole-GPU request (limits stand in for requests).
func gpus(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[fedinv.ResourceGPU]; ok {
			n += q.Value()
		} else if q, ok := c.Resources.Limits[fedinv.ResourceGPU]; ok {
			n += q.Value()
		}
	}
	return n
}
