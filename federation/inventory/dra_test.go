// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/test/builders/testnode"
)

func draGPU(i int, product string, memBytes int64, counterSet string) resourcev1.Device {
	d := resourcev1.Device{
		Name: fmt.Sprintf("gpu-%d", i),
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			DRAAttrType:        {StringValue: ptr.To(DRATypeGPU)},
			DRAAttrProductName: {StringValue: ptr.To(product)},
			DRAAttrUUID:        {StringValue: ptr.To(fmt.Sprintf("GPU-%d", i))},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			DRACapMemory: {Value: *resource.NewQuantity(memBytes, resource.BinarySI)},
		},
	}
	if counterSet != "" {
		d.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: counterSet}}
	}
	return d
}

func draMIG(name, profile, counterSet string) resourcev1.Device {
	return resourcev1.Device{
		Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			DRAAttrType:    {StringValue: ptr.To(DRATypeMIG)},
			DRAAttrProfile: {StringValue: ptr.To(profile)},
		},
		ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: counterSet}},
	}
}

func slice(node, pool string, gen int64, devs ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: pool + "-" + node},
		Spec: resourcev1.ResourceSliceSpec{Driver: DriverGPU, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: 1}, Devices: devs},
	}
}

func claim(name string, extended bool, pool string, devices ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if extended {
		c.Annotations = map[string]string{DRAExtendedResourceClaimAnnotation: "true"}
	}
	a := &resourcev1.AllocationResult{}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourcev1.DeviceRequestAllocationResult{
			Request: "gpus", Driver: DriverGPU, Pool: pool, Device: d})
	}
	c.Status.Allocation = a
	return c
}

func gpuClass(name string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(ResourceGPU)}}
}

func TestBuildDRA(t *testing.T) {
	const mem = 85520809984 // 81559 MiB
	const product = "NVIDIA H100 80GB HBM3"
	tainted := draGPU(3, product, mem, "")
	tainted.Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	dra := DRA{
		Slices: []*resourcev1.ResourceSlice{
			slice("d1", "d1", 2, draGPU(0, product, mem, ""), draGPU(1, product, mem, ""),
				draGPU(2, product, mem, ""), tainted),
			// an older generation of the pool is being replaced: not counted
			slice("d1", "d1", 1, draGPU(7, product, mem, "")),
			// a partitionable GPU and its MIG partitions share a counter set
			slice("d2", "d2", 1, draGPU(0, "NVIDIA A100-SXM4-80GB", 85899345920, "gpu-0-counters"),
				draGPU(1, "NVIDIA A100-SXM4-80GB", 85899345920, "gpu-1-counters"),
				draMIG("gpu-0-mig-1g10gb-0", "1g.10gb", "gpu-0-counters"),
				draMIG("gpu-0-mig-1g10gb-1", "1g.10gb", "gpu-0-counters")),
		},
		Claims: []*resourcev1.ResourceClaim{
			claim("other-tenant", false, "d1", "gpu-0"),
			// the kube-scheduler's claim of a pod that asked nvidia.com/gpu: counted by the pod
			claim("extended", true, "d1", "gpu-1"),
			// a MIG partition of gpu-0 is in use: the whole gpu-0 is not free
			claim("mig-user", false, "d2", "gpu-0-mig-1g10gb-0"),
		},
		Classes: []*resourcev1.DeviceClass{gpuClass(DriverGPU)},
	}
	nodes := []*corev1.Node{testnode.New("d1").Obj(), testnode.New("d2").Obj(), testnode.New("cpu").Obj()}
	pods := []*corev1.Pod{pod("d1", corev1.PodRunning, gpu(1))}

	c := BuildDRA("dra", nodes, pods, DefaultLabelKeys(), dra)
	if len(c.Nodes) != 2 {
		t.Fatalf("nodes = %+v, want d1 and d2 (cpu has no GPU)", c.Nodes)
	}
	d1, d2 := c.Nodes[0], c.Nodes[1]
	if d1.Product != "NVIDIA-H100-80GB-HBM3" || d1.MemoryMiB != 81559 {
		t.Errorf("d1 product, memory = %q, %d; want the GFD spelling NVIDIA-H100-80GB-HBM3 and 81559 MiB", d1.Product, d1.MemoryMiB)
	}
	if d1.DRAGPUs != 4 || d1.CapacityGPUs != 4 || d1.GPUs != 3 || d1.DRAClass != DriverGPU {
		t.Errorf("d1 DRA %d capacity %d GPUs %d class %q; want 4, 4, 3 (one tainted), %s",
			d1.DRAGPUs, d1.CapacityGPUs, d1.GPUs, d1.DRAClass, DriverGPU)
	}
	// gpu-0 by another claim, gpu-1 by the pod's nvidia.com/gpu (its extended claim not counted twice)
	if d1.UsedGPUs != 2 || d1.FreeGPUs() != 1 {
		t.Errorf("d1 used %d free %d, want 2 and 1", d1.UsedGPUs, d1.FreeGPUs())
	}
	if d2.GPUs != 2 || d2.UsedGPUs != 1 || d2.FreeGPUs() != 1 || d2.MemoryMiB != 81920 {
		t.Errorf("d2 GPUs %d used %d free %d memory %d; want 2, 1 (a MIG partition of gpu-0 is allocated), 1, 81920",
			d2.GPUs, d2.UsedGPUs, d2.FreeGPUs(), d2.MemoryMiB)
	}
	if len(d2.MIG) != 0 {
		t.Errorf("d2 MIG = %v: DRA MIG partitions are not nvidia.com/mig-* resources", d2.MIG)
	}
	if p := c.Pools(); len(p) != 2 || p[0].Name != "a100-80gb" || p[1].Name != "h100-80gb" || p[1].Free != 1 {
		t.Errorf("pools = %+v", p)
	}
}

// Without a DeviceClass that maps nvidia.com/gpu to devices, member pods
// asking for whole GPUs cannot start on the node: its devices are reported
// (DRAGPUs) but not counted as GPUs.
func TestBuildDRAWithoutExtendedResourceClass(t *testing.T) {
	dra := DRA{Slices: []*resourcev1.ResourceSlice{slice("d1", "d1", 1, draGPU(0, "NVIDIA H100 80GB HBM3", 1<<30, ""))},
		Classes: []*resourcev1.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: DriverGPU}}}}
	c := BuildDRA("dra", []*corev1.Node{testnode.New("d1").Obj()}, nil, DefaultLabelKeys(), dra)
	if len(c.Nodes) != 1 {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	n := c.Nodes[0]
	if n.DRAGPUs != 1 || n.GPUs != 0 || n.CapacityGPUs != 0 || n.DRAClass != "" || n.Product != "NVIDIA-H100-80GB-HBM3" {
		t.Errorf("node = %+v, want 1 DRA GPU, no GPUs, no class", n)
	}
	if c.FreeGPUs() != 0 {
		t.Errorf("free = %d, want 0", c.FreeGPUs())
	}
}

func TestExtendedGPUClassNewestWins(t *testing.T) {
	old, newer := gpuClass("b-old"), gpuClass("a-new")
	old.CreationTimestamp = metav1.Unix(100, 0)
	newer.CreationTimestamp = metav1.Unix(200, 0)
	other := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "z", CreationTimestamp: metav1.Unix(300, 0)},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/fpga")}}
	c, ok := DRA{Classes: []*resourcev1.DeviceClass{old, other, newer}}.ExtendedGPUClass()
	if !ok || c.Name != "a-new" {
		t.Fatalf("class = %v, %v; want a-new", c, ok)
	}
}

// TestDRADevicesKeepWhatEveryGPUShares: a node's DRADevices keep the
// attributes and capacities all its whole GPUs share (product, memory) and
// drop the ones that differ (uuid); the key tells two kinds of GPU apart.
func TestDRADevicesKeepWhatEveryGPUShares(t *testing.T) {
	d := DRA{Slices: []*resourcev1.ResourceSlice{
		slice("n1", "n1", 1, draGPU(0, "NVIDIA H100 80GB HBM3", 80<<30, ""), draGPU(1, "NVIDIA H100 80GB HBM3", 80<<30, "")),
		slice("n2", "n2", 1, draGPU(0, "NVIDIA A100 40GB", 40<<30, ""), draGPU(1, "NVIDIA H100 80GB HBM3", 80<<30, "")),
	}}
	nodes := d.Nodes()
	h := nodes["n1"].Devices
	if h == nil || h.Driver != DriverGPU {
		t.Fatalf("n1 devices = %+v", h)
	}
	if a, ok := h.Attributes[DRAAttrProductName]; !ok || *a.StringValue != "NVIDIA H100 80GB HBM3" {
		t.Errorf("n1 productName = %+v, want the shared product", a)
	}
	if _, ok := h.Attributes[DRAAttrUUID]; ok {
		t.Errorf("n1 kept uuid, which differs between its GPUs")
	}
	if q := h.Capacity[DRACapMemory]; q.Value() != 80<<30 {
		t.Errorf("n1 memory = %v, want 80Gi", q.String())
	}
	mixed := nodes["n2"].Devices
	if _, ok := mixed.Attributes[DRAAttrProductName]; ok {
		t.Errorf("n2 has two products but kept productName %v", *mixed.Attributes[DRAAttrProductName].StringValue)
	}
	if _, ok := mixed.Capacity[DRACapMemory]; ok {
		t.Errorf("n2 has two memory sizes but kept one")
	}
	if h.Key() == mixed.Key() {
		t.Errorf("two different kinds of GPU have one key %q", h.Key())
	}
	again := d.Nodes()["n1"].Devices
	if h.Key() != again.Key() {
		t.Errorf("key not stable: %q then %q", h.Key(), again.Key())
	}
	c := BuildDRA("c", []*corev1.Node{testnode.New("n1").Obj()}, nil, LabelKeys{}, d)
	if len(c.Nodes) != 1 || c.Nodes[0].DRADevices == nil || c.Nodes[0].DRADevices.Key() != h.Key() {
		t.Errorf("BuildDRA did not report the node's DRA devices: %+v", c.Nodes)
	}
}
