// SPDX-License-Identifier: Apache-2.0

package nodehealth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Spot says which nodes are marked to go: spot or preemptible nodes the
// cloud is about to take back, as its termination handler marks them.
type Spot struct {
	// Taints are taint keys that mark a node to go.
	Taints []string
	// Labels mark a node to go: "key" (any value) or "key=value".
	Labels []string
}

// Reclaimed says whether node n is marked to go, and by what.
func (s Spot) Reclaimed(n *corev1.Node) (string, bool) {
	if n == nil {
		return "", false
	}
	for _, t := range n.Spec.Taints {
		if slices.Contains(s.Taints, t.Key) {
			return fmt.Sprintf("node %s is marked to go (spot taint %s)", n.Name, t.Key), true
		}
	}
	for _, l := range s.Labels {
		k, v, withValue := strings.Cut(l, "=")
		if got, ok := n.Labels[k]; ok && (!withValue || got == v) {
			return fmt.Sprintf("node %s is marked to go (spot label %s)", n.Name, l), true
		}
	}
	return "", false
}

// Empty reports whether no taint or label is named.
func (s Spot) Empty() bool { return len(s.Taints) == 0 && len(s.Labels) == 0 }

// markReclaimed sets the NodeReclaimed condition, True with msg, on the
// members that lack it; the members keep running. The pod syncer reports
// the condition on their hub pods, and the hub moves each gang with its
// preemption grace (hub/dispatch reclaim). No grace applies here: the
// notice a cloud gives before it takes a spot node back is short.
func (w *Watcher) markReclaimed(ctx context.Context, members []*corev1.Pod, msg string) error {
	for _, p := range members {
		if hasReclaimed(p) {
			continue
		}
		marked := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := w.cache.Client().CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.UID != p.UID || hasReclaimed(cur) {
				return nil
			}
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{
				Type: v1alpha1.PodConditionNodeReclaimed, Status: corev1.ConditionTrue,
				Reason: v1alpha1.ReasonNodeReclaimed, Message: msg, LastTransitionTime: metav1.Now()})
			_, err = w.cache.Client().CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			marked = err == nil
			return err
		})
		if apierrors.IsNotFound(err) || err == nil && !marked {
			continue
		}
		if err != nil {
			return fmt.Errorf("mark member %s/%s reclaimed: %w", p.Namespace, p.Name, err)
		}
		klog.FromContext(ctx).Info("Member's node marked to go: the hub moves its gang with its preemption grace",
			"pod", klog.KObj(p), "message", msg)
		metricReclaimed.Inc()
	}
	return nil
}

func hasReclaimed(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1alpha1.PodConditionNodeReclaimed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
