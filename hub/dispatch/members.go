// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// memberPod builds the hub pod of one member, in its cluster's hub
// namespace (v1alpha1.ClusterNamespace). level is the effective
// pod-security level of the job's queue, stamped for the agent with the
// queue, which names the member's local namespace in the workload cluster
// (v1alpha1.LocalMemberNamespace): its rendezvous names are those of that
// namespace, where the agent creates its local pod.
func (d *Dispatcher) memberPod(j *v1alpha1.Job, r *ledger.Reservation, m ledger.Member, level v1alpha1.PodSecurityLevel) *corev1.Pod {
	t := memberTemplate(j, m).DeepCopy()
	idx := strconv.Itoa(int(m.Index))
	epoch := strconv.FormatInt(r.Epoch, 10)
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[v1alpha1.LabelJob], labels[v1alpha1.LabelMember], labels[v1alpha1.LabelEpoch] = j.Name, idx, epoch
	labels[v1alpha1.LabelCluster] = m.Cluster
	ann := map[string]string{}
	for k, v := range t.Annotations {
		ann[k] = v
	}
	ann[v1alpha1.AnnotationEpoch], ann[v1alpha1.AnnotationGangSize] = epoch, strconv.Itoa(len(r.Members))
	ann[v1alpha1.AnnotationQueue], ann[v1alpha1.AnnotationPodSecurity] = j.Spec.Queue, string(level)
	if m.Node != "" { // a CPU-only role's member has none: the local scheduler picks
		ann[v1alpha1.AnnotationTargetNode] = m.Node
	}
	if r.Level != "" {
		ann[v1alpha1.AnnotationTargetLevel] = r.Level
	}
	slice := 0
	for _, o := range r.Members {
		if o.Cluster == m.Cluster {
			slice++
		}
	}
	ann[v1alpha1.AnnotationSliceSize] = strconv.Itoa(slice)
	delete(ann, v1alpha1.AnnotationDevices) // only the job's device request, never the template's
	if d := j.Spec.Gang.Devices; d != nil && len(j.Spec.Roles) == 0 {
		b, err := json.Marshal(v1alpha1.MemberDevices{DeviceRequest: *d, Count: j.Spec.Gang.GPUsPerMember})
		if err == nil { // a struct of strings and numbers always marshals
			ann[v1alpha1.AnnotationDevices] = string(b)
		}
	}
	delete(ann, v1alpha1.AnnotationComputeDomain) // only the job's, never the template's
	if j.Spec.Gang.ComputeDomain && len(j.Spec.Roles) == 0 {
		b, err := json.Marshal(v1alpha1.MemberComputeDomain{Nodes: sliceNodes(r, m.Cluster)})
		if err == nil { // a list of strings always marshals
			ann[v1alpha1.AnnotationComputeDomain] = string(b)
		}
	}
	delete(ann, v1alpha1.AnnotationTraceParent) // only the hub's attempt trace, never the template's
	if tp := j.Annotations[v1alpha1.AnnotationTraceParent]; tp != "" {
		ann[v1alpha1.AnnotationTraceParent] = tp
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.MemberPodName(j.Name, r.Epoch, m.Index), Namespace: v1alpha1.ClusterNamespace(m.Cluster),
			Labels: labels, Annotations: ann},
		Spec: t.Spec,
	}
	p.Spec.NodeName = m.VirtualNode
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: v1alpha1.TaintVirtual,
		Operator: corev1.TolerationOpExists})
	if p.Spec.RestartPolicy == "" {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	rendezvousNames(&p.Spec, j.Name, m.Index)
	env := rendezvousEnv(j, r, v1alpha1.LocalMemberNamespace(j.Spec.Queue), m.Index)
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env...)
	}
	setRole(p, j, m)
	resume(p, j)
	return p
}

// memberState is what the dispatcher reads from a hub pod.
type memberState int

const (
	memberWaiting memberState = iota
	memberPrepared
	memberUnprepared // the agent reported it cannot prepare
	memberRunning
	memberSucceeded
	memberFailed
)

// stateOf classifies a hub pod.
func stateOf(p *corev1.Pod) (memberState, string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return memberSucceeded, ""
	case corev1.PodFailed:
		return memberFailed, fmt.Sprintf("member %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	case corev1.PodRunning:
		return memberRunning, ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type != v1alpha1.PodConditionPrepared {
			continue
		}
		switch c.Status {
		case corev1.ConditionTrue:
			return memberPrepared, ""
		case corev1.ConditionFalse:
			return memberUnprepared, fmt.Sprintf("member %s could not prepare on %s: %s %s",
				p.Name, p.Annotations[v1alpha1.AnnotationTargetNode], c.Reason, c.Message)
		}
	}
	return memberWaiting, ""
}

// reportedPrepared returns the names of the members that an agent's
// report (v1alpha1.PodConditionPreparedMembers, on any hub pod of pods)
// names as prepared: only members of the carrier's own cluster and epoch
// count, so an agent cannot speak for another cluster's members. A
// malformed report counts the members it named before the fault.
func reportedPrepared(pods []*corev1.Pod) map[string]bool {
	var out map[string]bool
	var byName map[string]*corev1.Pod
	for _, c := range pods {
		msg := v1alpha1.PreparedMembersReport(c)
		if msg == "" {
			continue
		}
		if byName == nil {
			byName, out = make(map[string]*corev1.Pod, len(pods)), map[string]bool{}
			for _, p := range pods {
				byName[p.Name] = p
			}
		}
		job, cluster, epoch := c.Labels[v1alpha1.LabelJob], c.Labels[v1alpha1.LabelCluster], epochOf(c)
		_ = v1alpha1.ParseMembers(msg, len(pods), func(i int32) {
			name := v1alpha1.MemberPodName(job, epoch, i)
			if p := byName[name]; p != nil && p.Labels[v1alpha1.LabelCluster] == cluster && epochOf(p) == epoch {
				out[name] = true
			}
		})
	}
	return out
}

// stateWith is stateOf with the agents' reports (reportedPrepared): a
// member a report names is Prepared unless its own hub pod says more (a
// Prepared False, a phase).
func stateWith(p *corev1.Pod, reported map[string]bool) (memberState, string) {
	st, msg := stateOf(p)
	if st == memberWaiting && reported[p.Name] {
		return memberPrepared, ""
	}
	return st, msg
}

// epochOf returns the epoch label of a hub pod (0 when unparsable).
func epochOf(p *corev1.Pod) int64 {
	e, _ := strconv.ParseInt(p.Labels[v1alpha1.LabelEpoch], 10, 64)
	return e
}

// memberStatuses returns each member's placement and phase.
func memberStatuses(s *scope) []v1alpha1.MemberStatus {
	byName := map[string]memberState{}
	pods := map[string]*corev1.Pod{}
	reported := reportedPrepared(s.pods)
	for _, p := range s.pods {
		st, _ := stateWith(p, reported)
		byName[p.Name] = st
		pods[p.Name] = p
	}
	out := make([]v1alpha1.MemberStatus, len(s.res.Members))
	for i, m := range s.res.Members {
		phase := v1alpha1.MemberPending
		pod := v1alpha1.MemberPodName(s.name, s.res.Epoch, m.Index)
		switch byName[pod] {
		case memberPrepared:
			phase = v1alpha1.MemberPrepared
		case memberRunning:
			phase = v1alpha1.MemberRunning
		case memberSucceeded:
			phase = v1alpha1.MemberSucceeded
		case memberFailed, memberUnprepared:
			phase = v1alpha1.MemberFailed
		}
		out[i] = v1alpha1.MemberStatus{Index: m.Index, Role: m.Role, Cluster: m.Cluster, Node: m.Node,
			Namespace: v1alpha1.ClusterNamespace(m.Cluster), Domain: m.Domain, Phase: phase}
		if p := pods[pod]; p != nil && phase == v1alpha1.MemberRunning {
			out[i].Address, out[i].Ready = memberAddress(p), podReady(p)
		}
	}
	return out
}

// podReady is the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// sliceNodes returns the distinct target nodes of the reservation's members
// in cluster, sorted: the agent counts those of a member's NVLink clique as
// its ComputeDomain's numNodes.
func sliceNodes(r *ledger.Reservation, cluster string) []string {
	var out []string
	for _, o := range r.Members {
		if o.Cluster == cluster && o.Node != "" && !slices.Contains(out, o.Node) {
			out = append(out, o.Node)
		}
	}
	slices.Sort(out)
	return out
}
