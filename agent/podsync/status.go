// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"time"

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
// no phase yet (as the API server defaults it), with the Prepared condition
// of a pod created prepared (v1alpha1.PreparedCondition).
func localStatus(lp *corev1.Pod) corev1.PodStatus {
	st := *lp.Status.DeepCopy()
	if st.Phase == "" {
		st.Phase = corev1.PodPending
	}
	if c := v1alpha1.PreparedCondition(lp); c != nil && !hasCondition(st.Conditions, c.Type) {
		st.Conditions = append(st.Conditions, *c) // created prepared (agent/gang PrepareCreate)
	}
	return st
}

// keepPrepared gives next's Prepared condition the transition time of
// prev's when both say the same: a member held at its prepare is reported
// Prepared before its local pod exists, and the condition its pod stands
// for once created (v1alpha1.PreparedCondition, dated at the create) must
// not move the hub pod again for its time alone.
func keepPrepared(next, prev *corev1.PodStatus) {
	var was *corev1.PodCondition
	for i := range prev.Conditions {
		if prev.Conditions[i].Type == v1alpha1.PodConditionPrepared {
			was = &prev.Conditions[i]
		}
	}
	if was == nil {
		return
	}
	for i := range next.Conditions {
		c := &next.Conditions[i]
		if c.Type == v1alpha1.PodConditionPrepared && c.Status == was.Status && c.Reason == was.Reason && c.Message == was.Message {
			c.LastTransitionTime = was.LastTransitionTime
		}
	}
}

// hasCondition says whether cs holds a condition of type t.
func hasCondition(cs []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return true
		}
	}
	return false
}

// hubMoved says whether a member's status next differs, for its hub pod,
// from shown (the status the hub pod shows) in more than the local
// scheduler's progress and the report of held members the pod may carry
// (joinReport, which writes it; the hub reads it only before the commit,
// and the next status written drops it): its PodScheduled condition while the pod is gated
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
	if a.QOSClass == "" || b.QOSClass == "" {
		// A held member's status is reported before its local pod exists
		// (the API server sets the class at the create): the next change
		// that matters carries it.
		a.QOSClass, b.QOSClass = "", ""
	}
	dropLocalClaims(&a)
	dropLocalClaims(&b)
	return !equality.Semantic.DeepEqual(a, b)
}

// hubConditions returns cs without the local scheduler's progress (see
// hubMoved); cs itself is left as it is.
func hubConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(cs))
	for _, c := range cs {
		if c.Type == corev1.PodScheduled && (c.Status == corev1.ConditionTrue || c.Reason == corev1.PodReasonSchedulingGated) ||
			c.Type == v1alpha1.PodConditionPreparedMembers {
			continue
		}
		out = append(out, c)
	}
	return out
}

// startHold is how long a member's start progress (starting) waits before
// it is written to its hub pod: a newer status that matters (Running, a
// failure) replaces it, so a member that starts within it costs one status
// write to the hub cluster instead of two.
const startHold = time.Second

// starting says whether next differs from shown, for the hub, only in the
// kubelet's normal progress starting a Pending pod: its IPs, start time
// and QoS class, the conditions Initialized, PodReadyToStartContainers,
// ContainersReady, Ready and PodScheduled, and containers waiting in
// ContainerCreating or PodInitializing. Any other waiting reason
// (ErrImagePull, CreateContainerConfigError, ...), a container running or
// terminated, another phase, a reason or message of the pod, or a change
// of the Prepared condition is not start progress.
func starting(shown, next *corev1.PodStatus) bool {
	if shown.Phase != corev1.PodPending || next.Phase != corev1.PodPending {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{next.InitContainerStatuses, next.ContainerStatuses} {
		for _, c := range list {
			w := c.State.Waiting
			if c.State.Running != nil || c.State.Terminated != nil ||
				w != nil && w.Reason != reasonContainerCreating && w.Reason != reasonPodInitializing {
				return false
			}
		}
	}
	a, b := startView(shown), startView(next)
	return equality.Semantic.DeepEqual(a, b)
}

// The kubelet's waiting reasons of a container it is starting.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
)

// startView returns st without what starting lets change.
func startView(st *corev1.PodStatus) corev1.PodStatus {
	v := *st
	v.Conditions = nil
	for _, c := range st.Conditions {
		switch c.Type {
		case corev1.PodInitialized, corev1.PodReadyToStartContainers, corev1.ContainersReady, corev1.PodReady,
			v1alpha1.PodConditionPreparedMembers:
			continue
		case corev1.PodScheduled:
			if c.Status == corev1.ConditionTrue || c.Reason == corev1.PodReasonSchedulingGated {
				continue
			}
		}
		v.Conditions = append(v.Conditions, c)
	}
	v.ContainerStatuses, v.InitContainerStatuses = nil, nil
	v.HostIP, v.HostIPs, v.PodIP, v.PodIPs, v.StartTime, v.QOSClass = "", nil, "", nil, nil, ""
	dropLocalClaims(&v)
	return v
}
