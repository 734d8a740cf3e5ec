// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// lostClusters maps the clusters that may be given up to their state:
// Lost (silent for longer than the fence timeout plus its margin, so their
// agents have stopped every member themselves: agent/fence), and NotReady,
// which only an AtLeastOnce job gives up.
type lostClusters map[string]v1alpha1.ClusterState

// gone reports whether cluster c is given up for a job of policy rp.
func (l lostClusters) gone(c string, rp v1alpha1.RunPolicy) bool {
	st, ok := l[c]
	return ok && (st == v1alpha1.ClusterLost || rp == v1alpha1.AtLeastOnce)
}

// member returns the first member of the reservation on a cluster given
// up for rp, or nil.
func (l lostClusters) member(res *ledger.Reservation, rp v1alpha1.RunPolicy) *ledger.Member {
	for i := range res.Members {
		if l.gone(res.Members[i].Cluster, rp) {
			return &res.Members[i]
		}
	}
	return nil
}

// split parts pods into those on a virtual node of a cluster given up for
// rp and the others.
func (l lostClusters) split(pods []*corev1.Pod, rp v1alpha1.RunPolicy) (onLost, rest []*corev1.Pod) {
	for _, p := range pods {
		if l.holds(p, rp) {
			onLost = append(onLost, p)
		} else {
			rest = append(rest, p)
		}
	}
	return onLost, rest
}

// holds reports whether pod p is a member on a cluster given up for rp,
// by the cluster label the dispatcher puts on every member pod.
func (l lostClusters) holds(p *corev1.Pod, rp v1alpha1.RunPolicy) bool {
	c, ok := p.Labels[v1alpha1.LabelCluster]
	return ok && l.gone(c, rp)
}

// runPolicy is the job's run policy (AtMostOnce for a gone job).
func (s *scope) runPolicy() v1alpha1.RunPolicy {
	if j := s.job.Object; j != nil && j.Spec.RunPolicy != "" {
		return j.Spec.RunPolicy
	}
	return v1alpha1.AtMostOnce
}

// clusterLoss acts on onClusterLoss for a gang with a member on a Lost
// cluster, or a member its agent reported Fenced, whole, while preparing or after the commit: Reschedule decides
// an abort with reason ClusterLost, which finish carries out as a requeue
// at once, without backoff and without counting a restart (the gang did not
// fail; its cluster went away); Fail decides the failure with reason
// ClusterLost, which finish ends as a Failed job. The members on the Lost
// cluster are force-deleted at the hub (tearDown): their agent has fenced
// itself, and no agent is left to confirm their end. A job with runPolicy
// AtLeastOnce gives up a NotReady cluster the same way, without waiting
// for the fence. The scheduler places a requeued gang only on Ready
// clusters.
func (d *Dispatcher) clusterLoss(s *scope) bool {
	if cur := current(s); cur != nil && cur.Phase != v1alpha1.DispatchPreparing && cur.Phase != v1alpha1.DispatchCommitted {
		return false // already tearing down: finish carries it out
	}
	msg := s.lostMessage()
	if msg == "" {
		return false
	}
	j := s.job.Object
	s.create, s.stamp = false, false
	s.teardown = &teardown{grace: grace(j)}
	if j.Spec.FailurePolicy.OnClusterLoss == v1alpha1.Fail {
		s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchFailing, v1alpha1.ReasonClusterLost,
			msg+"; onClusterLoss: Fail, the job fails")}
		return true
	}
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchAborting, v1alpha1.ReasonClusterLost,
		fmt.Sprintf("%s; onClusterLoss: Reschedule, moving the whole gang of epoch %d", msg, s.res.Epoch))}
	return true
}

// lostMessage says which member is on a Lost cluster, or which member its
// agent reported Fenced (the agent fenced itself and the hub cluster still
// hears it, before the hub counts the cluster Lost); "" for neither.
func (s *scope) lostMessage() string {
	if m := s.lost.member(s.res, s.runPolicy()); m != nil {
		if s.lost[m.Cluster] != v1alpha1.ClusterLost {
			return fmt.Sprintf("member %d is on cluster %s, which is %s (runPolicy AtLeastOnce: not waiting for its fence)",
				m.Index, m.Cluster, s.lost[m.Cluster])
		}
		return fmt.Sprintf("member %d is on cluster %s, which is Lost (silent past the fence timeout and its margin; its agent has stopped its members)",
			m.Index, m.Cluster)
	}
	for _, p := range s.pods {
		if p.Status.Phase == corev1.PodFailed && p.Status.Reason == v1alpha1.ReasonFenced {
			return fmt.Sprintf("member %s was stopped by its agent, which has not reached the hub for its fence timeout (%s)",
				p.Name, p.Status.Message)
		}
	}
	return ""
}

// forceDelete deletes pods with grace 0 at once, those already terminating
// with a longer grace included: they are on Lost clusters, whose agents
// fenced themselves and will not report their end.
func (d *Dispatcher) forceDelete(ctx context.Context, pods []*corev1.Pod) error {
	var zero int64
	var errs []error
	for _, p := range pods {
		if g := p.DeletionGracePeriodSeconds; g != nil && *g == 0 {
			continue
		}
		err := d.hub.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
