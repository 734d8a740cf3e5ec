// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// reportKey names one job's epoch in one hub namespace (one cluster).
type reportKey struct{ ns, job, epoch string }

// report is the agent's report of one job epoch's held members
// (v1alpha1.PodConditionPreparedMembers): their hub pods by index, and the
// member whose hub pod carries the report. Instead of a status write per
// held member, the carrier's status is written with every member held so
// far; virtual-kubelet writes the last status it was given for a pod, so
// members held while a write is queued ride on one write.
type report struct {
	members map[int32]types.NamespacedName
	carrier types.NamespacedName
}

// reportOf returns the report key of hub pod p and its member index; ok is
// false for a pod without a job, epoch or readable index, which is
// reported on its own hub pod.
func reportOf(p *corev1.Pod) (rk reportKey, idx int32, ok bool) {
	i, err := strconv.ParseInt(p.Labels[v1alpha1.LabelMember], 10, 32)
	job, epoch := p.Labels[v1alpha1.LabelJob], p.Labels[v1alpha1.LabelEpoch]
	if err != nil || i < 0 || job == "" || epoch == "" {
		return reportKey{}, 0, false
	}
	return reportKey{ns: p.Namespace, job: job, epoch: epoch}, int32(i), true
}

// joinReport adds held member k (entry e, its status Pending and Prepared)
// to its epoch's report and returns the entry whose hub pod must be
// written for it: the report's carrier, which e becomes when the report
// has none held; nil when nothing is to be written (the carrier shows the
// same report already). A member that is not the carrier counts as shown
// Prepared: the hub reads it from the report, and its own condition
// reaches its hub pod with its next status. Called with s.mu held.
func (s *Syncer) joinReport(k types.NamespacedName, e *entry) *entry {
	rk, idx, ok := reportOf(e.hub)
	if !ok {
		if !hubMoved(&e.shown, &e.status) {
			return nil
		}
		e.show()
		return e
	}
	r := s.reports[rk]
	if r == nil {
		r = &report{members: map[int32]types.NamespacedName{}}
		s.reports[rk] = r
	}
	r.members[idx] = k
	if c := s.pods[r.carrier]; c == nil || c.pending == nil || c.deleting || c.lost {
		r.carrier = k
	}
	c := s.pods[r.carrier]
	if c != e {
		e.shown = *e.status.DeepCopy()
	}
	msg := v1alpha1.FormatMembers(slices.Collect(maps.Keys(r.members)))
	setReport(&c.status, msg)
	if reportMessage(&c.shown) == msg && !hubMoved(&c.shown, &c.status) {
		return nil
	}
	c.show()
	return c
}

// leaveReport drops a member that is no longer held (created, refused,
// deleted) from its epoch's report; the hub pods keep what was written.
// Called with s.mu held.
func (s *Syncer) leaveReport(e *entry) {
	rk, idx, ok := reportOf(e.hub)
	if !ok {
		return
	}
	if r := s.reports[rk]; r != nil {
		delete(r.members, idx)
		if len(r.members) == 0 {
			delete(s.reports, rk)
		}
	}
}

// setReport sets the PodConditionPreparedMembers of st to msg.
func setReport(st *corev1.PodStatus, msg string) {
	c := corev1.PodCondition{Type: v1alpha1.PodConditionPreparedMembers, Status: corev1.ConditionTrue,
		Reason: v1alpha1.ReasonHeld, Message: msg, LastTransitionTime: metav1.Now()}
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// reportMessage is the PodConditionPreparedMembers message of st ("":
// none).
func reportMessage(st *corev1.PodStatus) string {
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.PodConditionPreparedMembers {
			return c.Message
		}
	}
	return ""
}
