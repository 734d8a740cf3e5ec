// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// startDeadline aborts a committed gang that is not fully running by its
// start deadline (the commit's time plus StartTimeout), whole: every member
// is deleted on both sides, then the reservation is released and the job
// requeued with reason StartTimeout and the abort backoff. A start timeout
// is not the job's fault (a member's GPUs were taken locally after its
// prepare, its node went away before the bind), so like an aborted prepare
// it does not count against failurePolicy.maxRestarts. Before the deadline
// it sets the scope's wake, so that Run passes again at it. It reports
// whether it decided the abort.
func (d *Dispatcher) startDeadline(s *scope, committed *v1alpha1.DispatchStatus) bool {
	if s.job.Object.Status.Phase == v1alpha1.JobRunning || committed.Time == nil {
		return false // started once: later failures are restarts
	}
	late := notStarted(s)
	if len(late) == 0 {
		return false
	}
	deadline := committed.Time.Add(d.cfg.StartTimeout)
	if s.now.Before(deadline) {
		s.wake = deadline
		return false
	}
	d.abort(s, v1alpha1.ReasonStartTimeout, fmt.Sprintf("%d of %d members did not start within %s of the commit: %s",
		len(late), len(s.res.Members), d.cfg.StartTimeout, describeLate(late)))
	s.stamp = false
	return true
}

// lateMember is a committed member that is not running.
type lateMember struct {
	index         int32
	cluster, node string
	// why is the member pod's scheduling reason, when it reports one.
	why string
}

// notStarted returns the members of the epoch, in index order, whose pod
// is neither running nor succeeded.
func notStarted(s *scope) []lateMember {
	byName := make(map[string]*corev1.Pod, len(s.pods))
	for _, p := range s.pods {
		byName[p.Name] = p
	}
	var late []lateMember
	for _, m := range s.res.Members {
		p := byName[v1alpha1.MemberPodName(s.name, s.res.Epoch, m.Index)]
		if p == nil {
			continue // a missing member restarts the gang in follow
		}
		if st, _ := stateOf(p); st == memberRunning || st == memberSucceeded {
			continue
		}
		late = append(late, lateMember{index: m.Index, cluster: m.Cluster, node: m.Node, why: schedulingReason(p)})
	}
	return late
}

// notPrepared returns the members of the epoch, in index order, that
// have not reported Prepared: why is "no hub pod" for a member not created
// yet, else the scheduling reason its pod shows (the agent writes the
// local scheduler's SchedulingGated to the hub pod only with another
// change, docs/agent.md; often none).
func notPrepared(s *scope) []lateMember {
	byName := make(map[string]*corev1.Pod, len(s.pods))
	for _, p := range s.pods {
		byName[p.Name] = p
	}
	var out []lateMember
	reported := reportedPrepared(s.pods)
	for _, m := range s.res.Members {
		p := byName[v1alpha1.MemberPodName(s.name, s.res.Epoch, m.Index)]
		why := "no hub pod"
		if p != nil {
			if st, _ := stateWith(p, reported); st != memberWaiting {
				continue
			}
			why = schedulingReason(p)
		}
		out = append(out, lateMember{index: m.Index, cluster: m.Cluster, node: m.Node, why: why})
	}
	return out
}

// schedulingReason is the reason of a pod's PodScheduled=False condition
// ("Unschedulable"), or "".
func schedulingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason
		}
	}
	return ""
}

// maxNamed is how many late members a StartTimeout message names.
const maxNamed = 8

// describeLate names the late members and their clusters for people:
// "member 1 on eu1 (node b, Unschedulable), member 3 on us1 (node c) and 2 more".
func describeLate(late []lateMember) string {
	parts := make([]string, 0, min(len(late), maxNamed))
	for _, m := range late[:min(len(late), maxNamed)] {
		detail := "node " + m.node
		if m.why != "" {
			detail += ", " + m.why
		}
		parts = append(parts, fmt.Sprintf("member %d on %s (%s)", m.index, m.cluster, detail))
	}
	text := strings.Join(parts, ", ")
	if n := len(late) - maxNamed; n > 0 {
		text += fmt.Sprintf(" and %d more", n)
	}
	return text
}
