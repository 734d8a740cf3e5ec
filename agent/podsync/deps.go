// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Dependencies is what the syncer asks about the objects a member's local
// pod references in its namespace (agent/deps: copies of the hub's
// ConfigMaps, Secrets and ServiceAccounts).
type Dependencies interface {
	// Ensure makes the objects local, the local pod built from hub, needs
	// exist in the workload cluster; it is called before local is created
	// (and again when a local pod is adopted). A *RefusedError refuses the
	// member for good; any other error is retried.
	Ensure(ctx context.Context, hub, local *corev1.Pod) error
	// Release says that hub no longer needs its objects once its local pod
	// is gone (it is being deleted, or was never created).
	Release(hub *corev1.Pod)
}

// RefusedError refuses a member: it is reported Prepared False with Reason
// and Message on the hub and its local pod is not created.
type RefusedError struct {
	Reason, Message string
}

func (e *RefusedError) Error() string { return e.Reason + ": " + e.Message }

// SetDependencies sets what is asked before each local pod is created (call
// before Run).
func (s *Syncer) SetDependencies(d Dependencies) { s.deps = d }

// ensureDeps asks the Dependencies, when set, for the objects of local. A
// refusal of a member whose local pod does not exist yet reports it
// (refuse) and returns true; one whose local pod exists already (adopted
// after a restart) is only recorded as an event: the member keeps running
// on the copies it has. Other errors are returned, to be retried.
func (s *Syncer) ensureDeps(ctx context.Context, vnode string, hub, local *corev1.Pod) (bool, error) {
	if s.deps == nil {
		return false, nil
	}
	err := s.deps.Ensure(ctx, hub, local)
	var re *RefusedError
	switch {
	case err == nil:
		return false, nil
	case !errors.As(err, &re):
		return false, fmt.Errorf("dependencies of local pod %s/%s: %w", hub.Namespace, hub.Name, err)
	case !s.hasLocal(hub):
		s.refuse(ctx, vnode, hub, re)
		return true, nil
	}
	klog.FromContext(ctx).Info("Dependencies of a running member cannot be copied; it keeps its local pod",
		append(podKeys(hub), "reason", re.Reason, "message", re.Message)...)
	if s.recorder != nil {
		s.recorder.Event(hub, corev1.EventTypeWarning, re.Reason, re.Message)
	}
	return false, nil
}

// refuse reports a member whose local pod is not created: Pending, Prepared
// False with the refusal's reason, so that the hub aborts the dispatch. The
// member is tracked as having no local pod, so that it is never created
// and its deletion ends it at once.
func (s *Syncer) refuse(ctx context.Context, vnode string, hub *corev1.Pod, re *RefusedError) {
	now := metav1.NewTime(time.Now())
	e := &entry{vnode: vnode, hub: hub.DeepCopy(), lost: true, status: corev1.PodStatus{
		Phase: corev1.PodPending, Reason: re.Reason, Message: re.Message,
		Conditions: []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionFalse,
			Reason: re.Reason, Message: re.Message, LastTransitionTime: now}},
	}}
	s.mu.Lock()
	s.pods[key(hub.Namespace, hub.Name)] = e
	s.lost[hub.UID] = true
	view := e.show()
	s.mu.Unlock()
	klog.FromContext(ctx).Info("Member refused: its dependencies cannot be copied", append(podKeys(hub), "reason", re.Reason, "message", re.Message)...)
	if s.recorder != nil {
		s.recorder.Event(view, corev1.EventTypeWarning, re.Reason, fmt.Sprintf("the member is not started: %s", re.Message))
	}
	s.sendShown(e)
}

// hasLocal reports whether the cache holds the local pod of hub.
func (s *Syncer) hasLocal(hub *corev1.Pod) bool {
	_, ok := s.LocalPodOf(hub)
	return ok
}

// reject reports a member the agent refuses to run at all (its pod names
// no queue, or violates its pod-security level): Failed with reason and
// msg, with an event, and tracked as having no local pod, so that it is
// never created and its deletion ends it at once.
func (s *Syncer) reject(ctx context.Context, vnode string, hub *corev1.Pod, reason, msg string) {
	e := &entry{vnode: vnode, hub: hub.DeepCopy(), lost: true, status: failedStatus(hub.Status, reason, msg)}
	s.mu.Lock()
	s.pods[key(hub.Namespace, hub.Name)] = e
	s.lost[hub.UID] = true
	view := e.show()
	s.mu.Unlock()
	klog.FromContext(ctx).Info("Member refused", append(podKeys(hub), "reason", reason, "message", msg)...)
	metricFailed.WithLabelValues(reason).Inc()
	if s.recorder != nil {
		s.recorder.Event(view, corev1.EventTypeWarning, reason, msg)
	}
	s.sendShown(e)
}
