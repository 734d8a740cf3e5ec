// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
)

// Ensure creates or updates the copy of every object local references, in
// local's namespace (its queue's), from the hub cluster's object of the
// same name in the cluster's hub namespace, before the local pod is created
// (podsync.Dependencies). A required object missing on the hub, a
// service-account token Secret, or a same-named object the agent did not
// create refuses the member with a *podsync.RefusedError; an optional
// object missing on the hub is skipped.
func (s *Syncer) Ensure(ctx context.Context, hub, local *corev1.Pod) error {
	refs, optional := refsOf(local)
	if len(refs) == 0 {
		return nil
	}
	s.writing.RLock()
	s.mu.Lock()
	s.claims[hub.UID] = &claim{hub: hub.DeepCopy(), refs: refs}
	s.mu.Unlock()
	var err error
	for _, r := range refs {
		if err = s.ensureOne(ctx, r, optional[r], jobOf(hub)); err != nil {
			break
		}
	}
	s.writing.RUnlock()
	if err != nil {
		s.Release(hub)
		return err
	}
	klog.FromContext(ctx).V(2).Info("Dependencies copied", "pod", klog.KObj(hub), "objects", len(refs))
	s.wake() // watch the objects, record the job on the copies
	return nil
}

// ensureOne copies r from the hub for job.
func (s *Syncer) ensureOne(ctx context.Context, r ref, optional bool, job string) error {
	k, err := kindOf(r.Kind)
	if err != nil {
		return err
	}
	src, err := k.get(ctx, s.hub, s.hubNS, r.Name)
	if apierrors.IsNotFound(err) {
		if optional {
			return nil
		}
		return &podsync.RefusedError{Reason: v1alpha1.ReasonDependencyMissing,
			Message: fmt.Sprintf("%s %q does not exist in namespace %s of the hub cluster", r.Kind, r.Name, s.hubNS)}
	}
	if err != nil {
		return fmt.Errorf("get %s %s/%s from the hub cluster: %w", r.Kind, s.hubNS, r.Name, err)
	}
	if sec, ok := src.(*corev1.Secret); ok {
		if err := podrefs.CheckSecret(sec); err != nil {
			return &podsync.RefusedError{Reason: v1alpha1.ReasonDependencyNotCarried, Message: err.Error()}
		}
	}
	return s.write(ctx, k, r, src, job, true)
}

// write makes the local copy of r match src, adding job to its jobs. With
// create false a missing copy is left missing.
func (s *Syncer) write(ctx context.Context, k ops, r ref, src object, job string, create bool) error {
	// Two members of one job in this cluster copy the same objects at the
	// same time: the loser of a create (AlreadyExists) or an update
	// (Conflict) reads the copy again and adds its job to it.
	var err error
	for range writeAttempts {
		err = s.writeOnce(ctx, k, r, src, job, create)
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// writeAttempts bounds the retries of write after losing a race.
const writeAttempts = 4

// writeOnce is one attempt of write.
func (s *Syncer) writeOnce(ctx context.Context, k ops, r ref, src object, job string, create bool) error {
	cur, err := k.get(ctx, s.local, r.Namespace, r.Name)
	if apierrors.IsNotFound(err) {
		if !create {
			return nil
		}
		cp := k.copyOf(src)
		stamp(cp, src, r.Namespace, job)
		if _, err := k.create(ctx, s.local, cp); err != nil {
			return fmt.Errorf("create copy of %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Dependency copied", "kind", r.Kind, "object", klog.KRef(r.Namespace, r.Name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("get local %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	if !isCopy(cur) {
		return &podsync.RefusedError{Reason: v1alpha1.ReasonDependencyConflict, Message: fmt.Sprintf(
			"%s %q exists in namespace %s of the workload cluster and was not created by shoal-agent; it is not overwritten",
			r.Kind, r.Name, r.Namespace)}
	}
	jobs := jobSet(cur)
	jobs[job] = true
	joined := joinJobs(jobs)
	if upToDate(cur, src) && cur.GetAnnotations()[v1alpha1.AnnotationCopyJobs] == joined {
		return nil
	}
	cp := k.copyOf(src)
	stamp(cp, src, r.Namespace, joined)
	cp.SetResourceVersion(cur.GetResourceVersion())
	_, err = k.update(ctx, s.local, cp)
	if apierrors.IsInvalid(err) { // an immutable copy, or a Secret of another type: replace it
		uid, rv := cur.GetUID(), cur.GetResourceVersion()
		err = k.delete(ctx, s.local, r.Namespace, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		if err == nil {
			cp.SetResourceVersion("")
			_, err = k.create(ctx, s.local, cp)
		}
	}
	if err != nil {
		return fmt.Errorf("update copy of %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Dependency copy updated", "kind", r.Kind, "object", klog.KRef(r.Namespace, r.Name),
		"sourceResourceVersion", src.GetResourceVersion())
	return nil
}

// jobSet is the set of jobs a copy records.
func jobSet(o metav1.Object) map[string]bool {
	out := map[string]bool{}
	for _, j := range strings.Split(o.GetAnnotations()[v1alpha1.AnnotationCopyJobs], ",") {
		if j != "" {
			out[j] = true
		}
	}
	return out
}
