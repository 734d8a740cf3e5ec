// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// memberDevices returns the DRA device request of a hub pod
// (v1alpha1.MemberDevicesOf); ok is false when it has none.
func memberDevices(hub *corev1.Pod) (v1alpha1.MemberDevices, bool, error) {
	return v1alpha1.MemberDevicesOf(hub.Annotations)
}

// addClaim makes the local pod use the member's ResourceClaim: a pod
// claim MemberClaimRequest naming the claim MemberClaimName(pod), used by
// the first container (where a member's GPUs go, as the hub puts a GPU
// limit there for extended resources).
func addClaim(p *corev1.Pod) {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{
		Name: v1alpha1.MemberClaimRequest, ResourceClaimName: ptr.To(v1alpha1.MemberClaimName(p.Name))})
	if len(p.Spec.Containers) > 0 {
		c := &p.Spec.Containers[0]
		c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: v1alpha1.MemberClaimRequest})
	}
}

// memberClaim is the ResourceClaim of a member's local pod: d.Count
// devices of d's class matching its selectors, owned by the pod so that it
// goes with it. The member cluster's kube-scheduler allocates it on the
// node the pod is pinned to, the node the hub planned.
func memberClaim(pod *corev1.Pod, d v1alpha1.MemberDevices) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.MemberClaimName(pod.Name), Namespace: pod.Namespace,
			Labels: map[string]string{v1alpha1.LabelManaged: "true", v1alpha1.LabelJob: pod.Labels[v1alpha1.LabelJob]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: v1alpha1.MemberClaimRequest,
			Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: d.DeviceClassName,
				Selectors:       d.Selectors,
				AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
				Count:           int64(d.Count),
			},
		}}}},
	}
}

// ensureClaim creates the member's ResourceClaim for its created local pod
// (an existing one of the same pod is kept). The pod waits at the gang
// gate until the hub commits, so the claim exists before the member
// cluster's scheduler looks at the pod.
func (s *Syncer) ensureClaim(ctx context.Context, pod *corev1.Pod, d v1alpha1.MemberDevices) error {
	claims := s.local.ResourceV1().ResourceClaims(pod.Namespace)
	want := memberClaim(pod, d)
	_, err := claims.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create ResourceClaim %s/%s: %w", pod.Namespace, want.Name, err)
		}
		return nil
	}
	got, err := claims.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ResourceClaim %s/%s: %w", pod.Namespace, want.Name, err)
	}
	if metav1.IsControlledBy(got, pod) {
		return nil
	}
	// A claim of an earlier pod of the same name (its garbage collection
	// pending): replace it, or this pod would never get devices.
	if err := claims.Delete(ctx, got.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &got.UID}}); err != nil &&
		!apierrors.IsNotFound(err) {
		return fmt.Errorf("delete stale ResourceClaim %s/%s: %w", pod.Namespace, got.Name, err)
	}
	if _, err := claims.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ResourceClaim %s/%s: %w", pod.Namespace, want.Name, err)
	}
	return nil
}
