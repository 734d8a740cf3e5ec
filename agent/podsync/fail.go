// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Fail stops the local pod ns/name (in the workload cluster) on the agent's own decision (its node
// failed, or it belongs to a stale epoch): the hub pod is reported Failed
// with reason and message at once, then the local pod is deleted with grace
// (nil: the pod's own). Later changes of the local pod, its deletion
// included, no longer change the reported status, and the hub pod is not
// run again. A local pod whose hub pod the syncer has not seen since the
// agent started is tracked from the local pod's copy of it.
func (s *Syncer) Fail(ctx context.Context, ns, name, reason, msg string, grace *int64) error {
	lp, ok := s.localPod(ns, name)
	if !ok {
		return nil
	}
	hk := hubKeyOf(lp)
	s.mu.Lock()
	e := s.pods[hk]
	if e == nil { // not seen since the agent started: report from the local pod
		e = &entry{vnode: lp.Annotations[v1alpha1.AnnotationVirtualNode], hub: fromLocal(lp), status: lp.Status}
		s.pods[hk] = e
	}
	var view *corev1.Pod
	if !e.lost && !e.deleting && string(e.hub.UID) == hubUID(lp) {
		e.lost = true // not recreated, and no later local event is reported
		s.lost[e.hub.UID] = true
		e.status = failedStatus(lp.Status, reason, msg)
		view = e.show()
	}
	s.mu.Unlock()
	if view != nil {
		s.sendShown(e)
		if s.recorder != nil {
			s.recorder.Event(view, corev1.EventTypeWarning, reason, msg)
		}
	}
	uid := lp.UID
	err := s.local.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace,
		Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete failed local pod %s/%s: %w", ns, name, err)
	}
	klog.FromContext(ctx).Info("Local pod stopped", append(podKeys(lp), "reason", reason, "message", msg)...)
	metricFailed.WithLabelValues(reason).Inc()
	return nil
}

// FailAll stops every managed local pod as Fail does, with reason and msg
// and no grace (the agent fences itself: agent/fence). It returns the errors
// of the pods it could not stop.
func (s *Syncer) FailAll(ctx context.Context, reason, msg string) error {
	pods, err := s.cache.Pods().List(labels.SelectorFromSet(labels.Set{v1alpha1.LabelManaged: "true"}))
	if err != nil {
		return err
	}
	var zero int64
	var errs []error
	for _, lp := range pods {
		if err := s.Fail(ctx, lp.Namespace, lp.Name, reason, msg, &zero); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// failedStatus is the status of a hub pod whose local pod the agent stopped.
func failedStatus(last corev1.PodStatus, reason, msg string) corev1.PodStatus {
	st := *last.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, msg
	terminate(&st, reason, msg)
	return st
}
