// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"maps"
	"slices"
	"strconv"
	"time"

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
// far, reportWindow after the first member held since the last write;
// virtual-kubelet writes the last status it was given for a pod, so
// members held while a write is queued ride on it too.
type report struct {
	members map[int32]types.NamespacedName
	carrier types.NamespacedName
	// flushing is set while a flushReport is due.
	flushing bool
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

// reportWindow is how long a report waits, from the first member that
// joins it unsent, for more members of the burst virtual-kubelet hands the
// agent, so that one write names them all and the report is formatted
// once per write, not once per member.
const reportWindow = 5 * time.Millisecond

// joinReport adds held member k (entry e, its status Pending and Prepared)
// to its epoch's report and returns e when it is reported on its own hub
// pod instead (it names no job, epoch or index) and that must be written;
// nil otherwise. The report is written by flushReport, on the report's
// carrier, reportWindow after the first member that joined it unsent. A
// member that is not the carrier counts as shown Prepared: the hub reads
// it from the report, and its own condition reaches its hub pod with its
// next status. Called with s.mu held.
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
	if !s.heldEntry(r.carrier) {
		r.carrier = k
	}
	if r.carrier != k {
		e.shown = *e.status.DeepCopy()
	}
	if !r.flushing {
		r.flushing = true
		time.AfterFunc(reportWindow, func() { s.flushReport(rk, r) })
	}
	return nil
}

// heldEntry says whether hub pod k is a member held now.
func (s *Syncer) heldEntry(k types.NamespacedName) bool {
	e := s.pods[k]
	return e != nil && e.pending != nil && !e.deleting && !e.lost
}

// flushReport writes report r of rk on its carrier (another held member
// of it when the carrier is no longer held), unless the carrier shows it
// already or no member is held any more (the commit came).
func (s *Syncer) flushReport(rk reportKey, r *report) {
	s.mu.Lock()
	r.flushing = false
	if s.reports[rk] != r {
		s.mu.Unlock()
		return
	}
	if !s.heldEntry(r.carrier) {
		r.carrier = types.NamespacedName{}
		for _, k := range r.members {
			if s.heldEntry(k) {
				r.carrier = k
				break
			}
		}
		if r.carrier.Name == "" {
			s.mu.Unlock()
			return
		}
	}
	c := s.pods[r.carrier]
	msg := v1alpha1.FormatMembers(slices.Collect(maps.Keys(r.members)))
	setReport(&c.status, msg)
	if reportMessage(&c.shown) == msg && !hubMoved(&c.shown, &c.status) {
		s.mu.Unlock()
		return
	}
	c.show()
	s.mu.Unlock()
	s.sendShown(c)
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
