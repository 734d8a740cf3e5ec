// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// terminate marks every container that is not terminated yet as terminated.
func terminate(st *corev1.PodStatus, reason, msg string) {
	now := metav1.Now()
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			if list[i].State.Terminated != nil {
				continue
			}
			list[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: reason, Message: msg, FinishedAt: now}}
			list[i].Ready = false
		}
	}
}

// deletedStatus is the final status of a pod deleted from the hub.
func deletedStatus(last corev1.PodStatus) corev1.PodStatus {
	st := *last.DeepCopy()
	if st.Phase != corev1.PodSucceeded {
		st.Phase = corev1.PodFailed
	}
	terminate(&st, v1alpha1.ReasonDeletedOnHub, "deleted on the hub")
	return st
}

// lostStatus is the status of a hub pod whose local pod was deleted by
// someone else than the agent.
func lostStatus(last corev1.PodStatus) corev1.PodStatus {
	st := *last.DeepCopy()
	if st.Phase != corev1.PodSucceeded {
		st.Phase = corev1.PodFailed
	}
	st.Reason = v1alpha1.ReasonLocalPodDeleted
	st.Message = "the pod was deleted in the workload cluster by someone other than the Shoal agent"
	terminate(&st, v1alpha1.ReasonLocalPodDeleted, st.Message)
	return st
}

// fromLocal reconstructs the identity of a hub pod from its local pod (used
// after an agent restart, before the hub pod is seen again).
func fromLocal(lp *corev1.Pod) *corev1.Pod {
	p := lp.DeepCopy()
	p.Namespace = v1alpha1.HubNamespaceOf(lp.Namespace, lp.Annotations)
	p.UID = types.UID(lp.Annotations[v1alpha1.AnnotationHubUID])
	p.ResourceVersion = ""
	p.Spec.NodeName = lp.Annotations[v1alpha1.AnnotationVirtualNode]
	dropLocalClaims(&p.Status)
	return p
}

// dropLocalClaims removes from a local pod's status, before the hub sees
// it, the claims made from templates only the local pod names (a compute
// domain's IMEX channel): the hub's API server refuses a status naming
// claims its pod's spec lacks, which would stop every status update of the
// member, its Prepared condition included.
func dropLocalClaims(st *corev1.PodStatus) {
	st.ResourceClaimStatuses = nil
}

// localStatus returns a copy of a local pod's status, Pending when it has
// no phase yet (as the API server defaults it).
func localStatus(lp *corev1.Pod) corev1.PodStatus {
	st := *lp.Status.DeepCopy()
	if st.Phase == "" {
		st.Phase = corev1.PodPending
	}
	return st
}

// hubMoved says whether a member's status next differs, for its hub pod,
// from shown (the status the hub pod shows) in more than the local
// scheduler's progress: its PodScheduled condition while the pod is gated
// (SchedulingGated) and once it is bound (True). Neither is acted on by
// the hub, and writing them was about two of a member's 4.4 status writes
// to the hub cluster at a gang start (docs/scheduling.md, "Session 24");
// the next change that matters (Prepared, Running, a failure) carries
// them. The local scheduler's refusal
// (PodScheduled=False for any other reason) moves the hub pod: the
// dispatcher names it when a member is late.
func hubMoved(shown, next *corev1.PodStatus) bool {
	a, b := *shown, *next
	a.Conditions, b.Conditions = hubConditions(a.Conditions), hubConditions(b.Conditions)
	dropLocalClaims(&a)
	dropLocalClaims(&b)
	return !equality.Semantic.DeepEqual(a, b)
}

// hubConditions returns cs without the local scheduler's progress (see
// hubMoved); cs itself is left as it is.
func hubConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(cs))
	for _, c := range cs {
		if c.Type == corev1.PodScheduled && (c.Status == corev1.ConditionTrue || c.Reason == corev1.PodReasonSchedulingGated) {
			continue
		}
		out = append(out, c)
	}
	return out
}
