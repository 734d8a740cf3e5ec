// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const deviceAnn = `{"deviceClassName":"gpu.nvidia.com","selectors":[{"cel":{"expression":"device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA H100 80GB HBM3\""}}],"count":2}`

// TestLocalPodOfDeviceMemberCarriesItsClaim: the local pod of a member with
// a DRA request names its claim, used by the first container, and the
// claim asks for exactly the request's devices, owned by the pod.
func TestLocalPodOfDeviceMemberCarriesItsClaim(t *testing.T) {
	hub := hubPod(map[string]string{v1alpha1.AnnotationTargetNode: "gpu-7", v1alpha1.AnnotationDevices: deviceAnn})
	p := LocalPod(hub, "shoal-eu1-h100", localNS)
	if len(p.Spec.ResourceClaims) != 1 || *p.Spec.ResourceClaims[0].ResourceClaimName != v1alpha1.MemberClaimName("p") ||
		p.Spec.ResourceClaims[0].Name != v1alpha1.MemberClaimRequest {
		t.Fatalf("resourceClaims = %+v", p.Spec.ResourceClaims)
	}
	if cl := p.Spec.Containers[0].Resources.Claims; len(cl) != 1 || cl[0].Name != v1alpha1.MemberClaimRequest {
		t.Fatalf("container claims = %+v", cl)
	}
	if plain := LocalPod(hubPod(nil), "shoal-eu1-h100", localNS); len(plain.Spec.ResourceClaims) != 0 {
		t.Fatalf("member without devices got claims %+v", plain.Spec.ResourceClaims)
	}

	d, ok, err := memberDevices(hub)
	if !ok || err != nil {
		t.Fatalf("memberDevices = %v, %v", ok, err)
	}
	p.UID = "local-uid"
	local := fake.NewClientset()
	s := &Syncer{local: local}
	ctx := context.Background()
	for range 2 { // the second finds its own claim and keeps it
		if err := s.ensureClaim(ctx, p, d); err != nil {
			t.Fatal(err)
		}
	}
	c, err := local.ResourceV1().ResourceClaims(localNS).Get(ctx, v1alpha1.MemberClaimName("p"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Spec.Devices.Requests
	if len(r) != 1 || r[0].Name != v1alpha1.MemberClaimRequest || r[0].Exactly == nil || r[0].Exactly.Count != 2 ||
		r[0].Exactly.DeviceClassName != "gpu.nvidia.com" || r[0].Exactly.AllocationMode != resourcev1.DeviceAllocationModeExactCount ||
		len(r[0].Exactly.Selectors) != 1 {
		t.Fatalf("claim requests = %+v", r)
	}
	if !metav1.IsControlledBy(c, p) {
		t.Fatalf("claim owners = %+v, want the local pod", c.OwnerReferences)
	}

	// A claim left by an earlier pod of the same name is replaced.
	next := p.DeepCopy()
	next.UID = "next-uid"
	if err := s.ensureClaim(ctx, next, d); err != nil {
		t.Fatal(err)
	}
	c, err = local.ResourceV1().ResourceClaims(localNS).Get(ctx, v1alpha1.MemberClaimName("p"), metav1.GetOptions{})
	if err != nil || !metav1.IsControlledBy(c, next) {
		t.Fatalf("stale claim not replaced: %+v, %v", c, err)
	}

	for _, bad := range []string{`{`, `{"deviceClassName":"gpu.nvidia.com"}`, `{"count":1}`} {
		if _, ok, err := memberDevices(hubPod(map[string]string{v1alpha1.AnnotationDevices: bad})); !ok || err == nil {
			t.Errorf("annotation %s: ok %v err %v, want an error", bad, ok, err)
		}
	}
}
