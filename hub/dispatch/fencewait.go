// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// minMemberGrace is the shortest grace a member on a cluster not given up
// is deleted with. A delete with grace 0 removes the hub pod at once, so
// nothing would wait for its agent to confirm that the local pod is gone:
// the reservation would be released and the next epoch could start while
// an agent cut off from the hub cluster still runs the old member. With a
// grace of at least a second the hub pod stays, terminating, until its
// agent has stopped the local pod (agent/podsync DeletePod), or until the
// cluster turns Lost, when its fence has expired (forceDelete).
const minMemberGrace int64 = 1

// heard maps each registered cluster to what its heartbeats said of the
// agent's link to the hub cluster, read once per pass with the cluster
// records.
type heard map[string]hubLink

// hubLink is a cluster's last heartbeat that said its agent reaches the
// hub cluster (nil: none yet, or an agent that does not say), and whether
// the hub counts that agent fenced for want of the hub cluster
// (v1alpha1.ReasonHubClusterFenced).
type hubLink struct {
	last   *metav1.Time
	fenced bool
}

// linkOf reads c's hubLink.
func linkOf(c *v1alpha1.Cluster) hubLink {
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable)
	return hubLink{last: c.Status.LastHubClusterContact,
		fenced: cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == v1alpha1.ReasonHubClusterFenced}
}

// sinceDeletion reports whether member p may be force-deleted before its
// cluster is Lost: the cluster is no longer registered; or its agent said
// in a heartbeat that it reaches the hub cluster, with a request to the
// hub cluster made after p's deletion was asked (the heartbeat came at
// least v1alpha1.HubClusterContactWindow after it), so the hang is in its
// own cluster and not a cut behind which the old member may still run; or
// no heartbeat has said so for longer than the fence timeout plus the
// margin, so the agent has fenced itself. A heartbeat that says the hub
// cluster is out of reach does not count: the agent may not have seen the
// deletion, and runs its members until its fence stops them.
func (h heard) sinceDeletion(p *corev1.Pod) bool {
	c, ok := p.Labels[v1alpha1.LabelCluster]
	if !ok || p.DeletionTimestamp == nil {
		return false
	}
	link, registered := h[c]
	switch {
	case !registered || link.fenced:
		return true
	case link.last == nil:
		return false
	}
	var g int64
	if p.DeletionGracePeriodSeconds != nil {
		g = *p.DeletionGracePeriodSeconds
	}
	// Both times have whole seconds: the deletion was asked in
	// [asked, asked+1s), the beat happened in [last, last+1s) and vouches
	// for a request to the hub cluster up to the window before.
	asked := p.DeletionTimestamp.Add(-time.Duration(g) * time.Second)
	return !link.last.Time.Before(asked.Add(time.Second + v1alpha1.HubClusterContactWindow))
}
