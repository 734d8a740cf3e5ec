// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"fmt"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/agent/cluster"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// A DRA-only node (no nvidia.com/gpu at all) is in the inventory with the
// GPUs of its ResourceSlice; a ResourceClaim's allocation uses them.
func TestWatcherReadsResourceSlices(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var devs []resourcev1.Device
	for i := range 8 {
		devs = append(devs, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				fedinv.DRAAttrType:        {StringValue: ptr.To(fedinv.DRATypeGPU)},
				fedinv.DRAAttrProductName: {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				fedinv.DRACapMemory: {Value: resource.MustParse("81559Mi")}}})
	}
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "d1-gpu"},
		Spec: resourcev1.ResourceSliceSpec{Driver: fedinv.DriverGPU, NodeName: ptr.To("d1"),
			Pool: resourcev1.ResourcePool{Name: "d1", Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: fedinv.DriverGPU},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(fedinv.ResourceGPU)}}
	cs := fake.NewClientset(testnode.New("d1").Obj(), slice, class)
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: resourcev1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "resourceclaims", Namespaced: true}, {Name: "deviceclasses"}}}}
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	w := NewWatcher(c, "dra", fedinv.TopologyChoice{}, WithInterval(20*time.Millisecond))
	ch := w.Subscribe()
	go func() { _ = w.Run(ctx) }()

	first := next(t, ch, func(c fedinv.Cluster) bool { return c.FreeGPUs() == 8 })
	n := first.Nodes[0]
	if n.Product != "NVIDIA-H100-80GB-HBM3" || n.MemoryMiB != 81559 || n.DRAGPUs != 8 || n.DRAClass != fedinv.DriverGPU {
		t.Errorf("node = %+v", n)
	}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "d1", Device: "gpu-0"},
				{Request: "r", Driver: fedinv.DriverGPU, Pool: "d1", Device: "gpu-5"}}}}}}
	if _, err := cs.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next(t, ch, func(c fedinv.Cluster) bool { return c.FreeGPUs() == 6 })
}
