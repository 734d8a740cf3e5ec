// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// CreatePod creates the local pod of a hub pod bound to vnode, or adopts the
// one a previous agent run created. A hub pod whose local pod was deleted
// behind the agent's back is not recreated. The objects the local pod
// references are made to exist first (SetDependencies); a member they
// refuse is reported Prepared False and never created.
func (s *Syncer) CreatePod(ctx context.Context, vnode string, hub *corev1.Pod) error {
	s.mu.Lock()
	lost := s.lost[hub.UID]
	s.mu.Unlock()
	if lost {
		return nil
	}
	if s.allowed != nil {
		if err := s.allowed(); err != nil {
			return fmt.Errorf("create local pod %s/%s: %w", hub.Namespace, hub.Name, err)
		}
	}
	lp := LocalPod(hub, vnode)
	if err := s.gate.Mutate(hub, lp); err != nil {
		return err
	}
	if err := s.ensureNamespace(ctx, hub.Namespace); err != nil {
		return err
	}
	if refused, err := s.ensureDeps(ctx, vnode, hub, lp); refused || err != nil {
		return err
	}
	created, err := s.local.CoreV1().Pods(hub.Namespace).Create(ctx, lp, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = s.local.CoreV1().Pods(hub.Namespace).Get(ctx, hub.Name, metav1.GetOptions{})
		if err == nil && created.Annotations[v1alpha1.AnnotationHubUID] != string(hub.UID) {
			return errdefs.AsInvalidInput(fmt.Errorf("local pod %s/%s exists and belongs to another hub pod", hub.Namespace, hub.Name))
		}
	}
	if err != nil {
		return fmt.Errorf("create local pod %s/%s: %w", hub.Namespace, hub.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Local pod created", "pod", klog.KObj(hub), "virtualNode", vnode)
	metricCreated.Inc()
	s.track(vnode, hub, created)
	return nil
}

// track records a hub pod and pushes the local pod's current status.
func (s *Syncer) track(vnode string, hub, local *corev1.Pod) {
	s.mu.Lock()
	// The local pod may have changed before this entry existed (the gang
	// gate can prepare it while Create returns): localChanged dropped that
	// event and no other may follow, so the member would never be reported
	// Prepared. The cache holds that change; it is read under s.mu, so a
	// later event still overwrites it.
	if lp, ok := s.localPod(local.Namespace, local.Name); ok && lp.UID == local.UID {
		local = lp
	}
	e := &entry{vnode: vnode, hub: hub.DeepCopy(), status: *local.Status.DeepCopy()}
	if e.status.Phase == "" {
		e.status.Phase = corev1.PodPending
	}
	s.pods[key(hub.Namespace, hub.Name)] = e
	view := e.hubView()
	s.mu.Unlock()
	s.send(vnode, view)
}

// UpdatePod records the newer hub pod (and adopts a local pod after a restart).
// Changes that Kubernetes allows on a running pod are not yet propagated.
func (s *Syncer) UpdatePod(ctx context.Context, vnode string, hub *corev1.Pod) error {
	s.mu.Lock()
	e := s.pods[key(hub.Namespace, hub.Name)]
	lost := false
	if e != nil {
		e.hub = hub.DeepCopy()
		lost = e.lost
	}
	s.mu.Unlock()
	if e == nil {
		return s.CreatePod(ctx, vnode, hub)
	}
	if lost { // no local pod to commit: it was deleted or stopped
		return nil
	}
	return s.gate.Commit(ctx, hub)
}

// DeletePod deletes the local pod with the hub pod's grace period. When the
// local pod is gone its terminal status is pushed, so that virtual-kubelet
// removes the hub pod.
func (s *Syncer) DeletePod(ctx context.Context, hub *corev1.Pod) error {
	k := key(hub.Namespace, hub.Name)
	s.mu.Lock()
	e := s.pods[k]
	if e == nil {
		e = &entry{vnode: hub.Spec.NodeName, hub: hub.DeepCopy()}
		s.pods[k] = e
	}
	e.deleting = true
	lost := e.lost
	s.mu.Unlock()
	if s.deps != nil {
		s.deps.Release(hub)
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: hub.DeletionGracePeriodSeconds}
	if uid := s.localUID(hub); uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := s.local.CoreV1().Pods(hub.Namespace).Delete(ctx, hub.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete local pod %s/%s: %w", hub.Namespace, hub.Name, err)
	}
	metricDeleted.Inc()
	if err != nil || lost { // already gone: report the end now
		s.mu.Lock()
		delete(s.pods, k)
		e.status = deletedStatus(e.status)
		view := e.hubView()
		s.mu.Unlock()
		s.send(e.vnode, view)
	}
	return nil
}

// localUID returns the UID of the local pod of hub, from the cache.
func (s *Syncer) localUID(hub *corev1.Pod) types.UID {
	lp, ok := s.localPod(hub.Namespace, hub.Name)
	if !ok || lp.Annotations[v1alpha1.AnnotationHubUID] != string(hub.UID) {
		return ""
	}
	return lp.UID
}

// GetPod returns the hub pod as the provider sees it, or NotFound.
func (s *Syncer) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	s.mu.Lock()
	e := s.pods[key(ns, name)]
	var view *corev1.Pod
	if e != nil {
		view = e.hubView()
	}
	s.mu.Unlock()
	if view != nil {
		return view, nil
	}
	if lp, ok := s.localPod(ns, name); ok {
		return fromLocal(lp), nil
	}
	return nil, errdefs.NotFoundf("pod %s/%s is not known to the agent", ns, name)
}

// GetPodStatus returns the pod's status as the provider sees it.
func (s *Syncer) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	p, err := s.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &p.Status, nil
}

// GetPods returns the pods of vnode: those tracked and the managed local
// pods annotated with it (so that pods left over from an earlier run whose
// hub pod is gone are deleted at start).
func (s *Syncer) GetPods(_ context.Context, vnode string) ([]*corev1.Pod, error) {
	seen := map[string]bool{}
	var out []*corev1.Pod
	s.mu.Lock()
	for k, e := range s.pods {
		if e.vnode == vnode {
			out = append(out, e.hubView())
			seen[k.String()] = true
		}
	}
	s.mu.Unlock()
	locals, err := s.cache.PodsOfVirtualNode(vnode)
	if err != nil {
		return nil, err
	}
	for _, lp := range locals {
		if !seen[key(lp.Namespace, lp.Name).String()] {
			out = append(out, fromLocal(lp))
		}
	}
	return out, nil
}
