// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// AnnotationPrepared, "True" on a gang member's local pod, says the agent
// prepared the member before it created the pod (the member fits its
// target node, its epoch is recorded): a create cannot set a status
// condition, and the annotation stands for PodConditionPrepared True
// (PreparedCondition), so that the prepare costs no write of its own.
const AnnotationPrepared = Prefix + "prepared"

// ReasonFits is the reason of a PodConditionPrepared True: the member fits
// its target node.
const ReasonFits = "Fits"

// PreparedCondition returns the PodConditionPrepared of a member's local
// pod: its status condition, or, for a pod created prepared
// (AnnotationPrepared "True"), the condition that annotation stands for,
// True with reason ReasonFits since the pod's creation. nil: not prepared
// yet. The returned condition must not be modified.
func PreparedCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == PodConditionPrepared {
			return &p.Status.Conditions[i]
		}
	}
	if p.Annotations[AnnotationPrepared] != string(corev1.ConditionTrue) {
		return nil
	}
	return &corev1.PodCondition{Type: PodConditionPrepared, Status: corev1.ConditionTrue, Reason: ReasonFits,
		LastTransitionTime: p.CreationTimestamp}
}
