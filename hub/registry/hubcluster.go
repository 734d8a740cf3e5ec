// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// hubClusterBeat sets c's HubClusterReachable condition from a heartbeat
// that said whether the agent reaches the hub cluster (before evaluate,
// which turns it to ReasonHubClusterFenced once that is too long ago); one
// that did not say removes it.
func (r *Registry) hubClusterBeat(c *v1alpha1.Cluster, said *bool) {
	if said == nil {
		meta.RemoveStatusCondition(&c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable)
		return
	}
	reachable := *said
	cond := metav1.Condition{Type: v1alpha1.ClusterConditionHubClusterReachable, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonHubClusterReachable, Message: "the agent reaches the hub cluster"}
	if !reachable {
		if prev := meta.FindStatusCondition(c.Status.Conditions, cond.Type); prev != nil && prev.Reason == v1alpha1.ReasonHubClusterFenced {
			return // still fenced: evaluate keeps it so
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonHubClusterUnreachable
		cond.Message = "the agent's heartbeats arrive but it cannot reach the hub cluster: it does not see the deletion of its members, and fences itself after its fence timeout"
	}
	meta.SetStatusCondition(&c.Status.Conditions, cond)
}

// HubClusterFenced reports whether the agent of c has fenced itself for
// want of the hub cluster: it said it reached the hub cluster before (so
// it is an agent that says so, and fences by it), its heartbeats say it
// does not now, and the last that said it does is older than the fence
// timeout plus the margin. Counted like State, from the end of that
// heartbeat's second.
func HubClusterFenced(c *v1alpha1.Cluster, now time.Time, fence, margin time.Duration) (bool, time.Duration) {
	last := c.Status.LastHubClusterContact
	if last == nil || !meta.IsStatusConditionFalse(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable) {
		return false, 0
	}
	silent := now.Sub(last.Add(time.Second))
	return silent > fence+margin, silent
}

// evaluateHubCluster turns c's HubClusterReachable condition to
// ReasonHubClusterFenced when HubClusterFenced; it reports whether it
// changed.
func (r *Registry) evaluateHubCluster(c *v1alpha1.Cluster) bool {
	fenced, silent := HubClusterFenced(c, r.clock.Now(), r.cfg.FenceTimeout, r.cfg.FenceMargin)
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable)
	if !fenced || prev.Reason == v1alpha1.ReasonHubClusterFenced {
		return false
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ClusterConditionHubClusterReachable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHubClusterFenced,
		Message: fmt.Sprintf("the agent has not reached the hub cluster for %s, longer than the fence timeout %s plus the margin %s: it has fenced itself",
			silent.Round(time.Second), r.cfg.FenceTimeout, r.cfg.FenceMargin),
		LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	return true
}
