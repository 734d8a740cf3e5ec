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

// TestFitCountsDRAMIG: on a DRA-only node (no nvidia.com/mig-* allocatable)
// a MIG member fits in the node's static MIG partitions of its profile that
// a DeviceClass maps to nvidia.com/mig-<profile>, less those another claim
// holds and those bound pods hold; without the mapping class it does not fit.
func TestFitCountsDRAMIG(t *testing.T) {
	const r1g = "nvidia.com/mig-1g.10gb"
	sv := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: ptr.To(s)} }
	var devs []resourcev1.Device
	for i := range 7 {
		devs = append(devs, resourcev1.Device{Name: fmt.Sprintf("gpu-2-mig-1g10gb-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				fedinv.DRAAttrType: sv(fedinv.DRATypeMIG), fedinv.DRAAttrProfile: sv("1g.10gb"),
				fedinv.DRAAttrParentUUID: sv("GPU-2")}})
	}
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n1-gpu"},
		Spec: resourcev1.ResourceSliceSpec{Driver: fedinv.DriverGPU, NodeName: ptr.To("n1"),
			Pool: resourcev1.ResourcePool{Name: "n1", Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig-1g.10gb.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(r1g),
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: `device.attributes['gpu.nvidia.com'].profile == '1g.10gb'`}}}}}
	other := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "tenant"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "n1", Device: "gpu-2-mig-1g10gb-0"},
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "n1", Device: "gpu-2-mig-1g10gb-1"}}}}}}
	for name, tc := range map[string]struct {
		need   map[string]int64
		objs   []runtime.Object
		reason string
	}{
		"fits in the free partitions":        {need: map[string]int64{r1g: 5}, objs: []runtime.Object{slice, class, other}, reason: "Fits"},
		"another claim holds the rest":       {need: map[string]int64{r1g: 6}, objs: []runtime.Object{slice, class, other}, reason: "InsufficientGPUs"},
		"bound pod counts on a DRA node":     {need: map[string]int64{r1g: 1}, objs: []runtime.Object{slice, class, other, bound("x", map[string]int64{r1g: 5})}, reason: "InsufficientGPUs"},
		"no class maps nvidia.com/mig-1g":    {need: map[string]int64{r1g: 1}, objs: []runtime.Object{slice}, reason: "InsufficientGPUs"},
		"partitions do not serve whole GPUs": {need: map[string]int64{fedinv.ResourceGPU: 1}, objs: []runtime.Object{slice, class}, reason: "InsufficientGPUs"},
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
			hub := member("m0", tc.need)
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
