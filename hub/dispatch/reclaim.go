// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// reclaim moves a gang with a member whose node is marked to go (its agent
// set PodConditionNodeReclaimed: a spot or preemptible node carries the
// taint or label the agent was told to read so): it decides an abort with
// reason NodeReclaimed, whole, while preparing or after the commit. As for
// a drain, members are deleted with the job's preemption grace (SIGTERM,
// then the grace for a checkpoint) and the job is requeued at once,
// without backoff and without counting a restart (finish). The agent
// reports the node unschedulable in its inventory, so the scheduler places
// the gang elsewhere.
func (d *Dispatcher) reclaim(s *scope) bool {
	if cur := current(s); cur != nil && cur.Phase != v1alpha1.DispatchPreparing && cur.Phase != v1alpha1.DispatchCommitted {
		return false // already tearing down: finish carries it out
	}
	p, c := reclaimed(s.pods)
	if p == nil {
		return false
	}
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchAborting, v1alpha1.ReasonNodeReclaimed,
		fmt.Sprintf("member %s: %s; moving the whole gang of epoch %d with its preemption grace", p.Name, c.Message, s.res.Epoch))}
	s.create, s.stamp = false, false
	s.teardown = &teardown{grace: grace(s.job.Object)}
	return true
}

// reclaimed returns the first member (not terminating) whose
// NodeReclaimed condition is True, with the condition.
func reclaimed(pods []*corev1.Pod) (*corev1.Pod, *corev1.PodCondition) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == v1alpha1.PodConditionNodeReclaimed && c.Status == corev1.ConditionTrue {
				return p, c
			}
		}
	}
	return nil, nil
}
