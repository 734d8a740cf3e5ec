// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// TestFitCountsDRAGPUs: on a DRA-only node (no nvidia.com/gpu allocatable)
// a member asking for whole GPUs fits in the devices of the node's slice
// that a DeviceClass maps to nvidia.com/gpu, less those another claim
// holds; without the mapping class it does not fit at all.
func TestFitCountsDRAGPUs(t *testing.T) {
	var devs []resourcev1.Device
	for i := range 8 {
		devs = append(devs, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				fedinv.DRAAttrType: {StringValue: ptr.To(fedinv.DRATypeGPU)}}})
	}
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n1-gpu"},
		Spec: resourcev1.ResourceSliceSpec{Driver: fedinv.DriverGPU, NodeName: ptr.To("n1"),
			Pool: resourcev1.ResourcePool{Name: "n1", Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: fedinv.DriverGPU},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(fedinv.ResourceGPU)}}
	other := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "tenant"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "n1", Device: "gpu-0"},
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "n1", Device: "gpu-1"},
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "n1", Device: "gpu-2"}}}}}}
	for name, tc := range map[string]struct {
		gpus    int64
		devices int32 // a member asking by DRA request (spec.gang.devices) instead
		objs    []runtime.Object
		reason  string
	}{
		"device member fits in the free devices":      {devices: 5, objs: []runtime.Object{slice, class, other}, reason: "Fits"},
		"device member: another claim holds the rest": {devices: 6, objs: []runtime.Object{slice, class, other}, reason: "InsufficientGPUs"},
		"fits in the free devices":                    {gpus: 5, objs: []runtime.Object{slice, class, other}, reason: "Fits"},
		"another claim holds the rest":                {gpus: 6, objs: []runtime.Object{slice, class, other}, reason: "InsufficientGPUs"},
		"no class maps nvidia.com/gpu":                {gpus: 1, objs: []runtime.Object{slice}, reason: "InsufficientGPUs"},
		"bound pod counts on a DRA node":              {gpus: 1, objs: []runtime.Object{slice, class, other, bound("x", map[string]int64{fedinv.ResourceGPU: 5})}, reason: "InsufficientGPUs"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			local := fake.NewClientset(append([]runtime.Object{testnode.New("n1").Obj()}, tc.objs...)...)
			local.Resources = []*metav1.APIResourceList{{GroupVersion: resourcev1.SchemeGroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "resourceclaims", Namespaced: true}, {Name: "deviceclasses"}}}}
			c, err := cluster.New(local)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = c.Run(t.Context()) }()
			if !c.WaitForCacheSync(t.Context()) || !c.ServesDRA() {
				t.Fatal("cache not synced with DRA")
			}
			g := gang.New(c)
			if err := g.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			hub := member("m0", map[string]int64{fedinv.ResourceGPU: tc.gpus})
			if tc.devices > 0 {
				hub = member("m0", map[string]int64{})
				hub.Annotations[v1alpha1.AnnotationDevices] = fmt.Sprintf(`{"deviceClassName":"gpu.nvidia.com","count":%d}`, tc.devices)
			}
			lp := hub.DeepCopy()
			if err := g.Mutate(hub, lp); err != nil {
				t.Fatal(err)
			}
			lp, err = local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Prepare(ctx, lp); err != nil {
				t.Fatal(err)
			}
			lp, _ = local.CoreV1().Pods("ns").Get(ctx, lp.Name, metav1.GetOptions{})
			cond := lp.Status.Conditions[len(lp.Status.Conditions)-1]
			if cond.Type != v1alpha1.PodConditionPrepared || cond.Reason != tc.reason {
				t.Fatalf("condition %+v, want reason %s", cond, tc.reason)
			}
			if (cond.Status == corev1.ConditionTrue) != (tc.reason == "Fits") {
				t.Fatalf("condition status %s with reason %s", cond.Status, cond.Reason)
			}
		})
	}
}

// TestDeviceMemberDoesNotFitDevicePluginGPUs: a member asking by DRA
// request does not fit a node whose GPUs are the device plugin's
// (nvidia.com/gpu allocatable, no ResourceSlice): its claim could never be
// allocated there, so it is reported unprepared rather than left Pending.
func TestDeviceMemberDoesNotFitDevicePluginGPUs(t *testing.T) {
	ctx := context.Background()
	g, local := newGate(t, gpuNode())
	hub := member("m0", map[string]int64{})
	hub.Annotations[v1alpha1.AnnotationDevices] = `{"deviceClassName":"gpu.nvidia.com","count":2}`
	cond := prepareMember(ctx, t, g, local, hub)
	if cond.Type != v1alpha1.PodConditionPrepared || cond.Status != corev1.ConditionFalse || cond.Reason != "InsufficientGPUs" {
		t.Fatalf("condition %+v, want Prepared False InsufficientGPUs", cond)
	}
}
