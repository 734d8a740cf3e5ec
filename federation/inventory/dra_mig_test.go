// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/test/builders/testnode"
)

const a100 = "NVIDIA A100-SXM4-80GB"

// staticMIG is a MIG partition as the driver publishes a partition the
// MIG manager created: no counters, its parent GPU named by parentUUID.
func staticMIG(parent int, profile string, i int) resourcev1.Device {
	d := draMIG(fmt.Sprintf("gpu-%d-mig-%s-%d", parent, profile, i), profile, "")
	d.ConsumesCounters = nil
	d.Attributes[DRAAttrParentUUID] = resourcev1.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-%d", parent))}
	d.Attributes[DRAAttrProductName] = resourcev1.DeviceAttribute{StringValue: ptr.To(a100)}
	return d
}

// migClass is a DeviceClass mapping nvidia.com/mig-<profile> to the
// driver's partitions of that profile, as the fleet's simulator installs it.
func migClass(profile string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig-" + profile + ".nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == 'gpu.nvidia.com' && ` +
				`device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '` + profile + `'`}}},
			ExtendedResourceName: ptr.To(ResourceMIGOf(profile)),
		}}
}

// migNode is one a100-mig-dra node: 2 whole GPUs, GPU 2 as 7 x 1g.10gb
// (the first tainted), GPU 6 as 2 x 3g.40gb.
func migNode(node string) *resourcev1.ResourceSlice {
	devs := []resourcev1.Device{draGPU(0, a100, 85899345920, ""), draGPU(1, a100, 85899345920, "")}
	for i := range 7 {
		devs = append(devs, staticMIG(2, "1g.10gb", i))
	}
	devs[2].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourcev1.DeviceTaintEffectNoExecute}}
	devs = append(devs, staticMIG(6, "3g.40gb", 0), staticMIG(6, "3g.40gb", 4))
	return slice(node, node, 1, devs...)
}

// TestBuildDRAStaticMIG: static MIG partitions are the node's
// nvidia.com/mig-<profile> where a DeviceClass maps that resource to them,
// and reported only (draMIG) where none does; a tainted partition is not
// allocatable; one another claim holds is used; one the kube-scheduler
// allocated for a pod's nvidia.com/mig-* request is counted once, by the pod.
func TestBuildDRAStaticMIG(t *testing.T) {
	const r1g, r3g = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"
	dra := DRA{
		Slices: []*resourcev1.ResourceSlice{migNode("m1")},
		Claims: []*resourcev1.ResourceClaim{
			claim("other-tenant", false, "m1", "gpu-2-mig-1g.10gb-1"),
			claim("extended", true, "m1", "gpu-2-mig-1g.10gb-2"),
			claim("on-tainted", false, "m1", "gpu-2-mig-1g.10gb-0"),
		},
		Classes: []*resourcev1.DeviceClass{gpuClass(DriverGPU), migClass("1g.10gb")},
	}
	pods := []*corev1.Pod{pod("m1", corev1.PodRunning, map[string]int64{r1g: 1})}
	c := BuildDRA("dra", []*corev1.Node{testnode.New("m1").Obj()}, pods, DefaultLabelKeys(), dra)
	if len(c.Nodes) != 1 {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	n := c.Nodes[0]
	if n.GPUs != 2 || n.UsedGPUs != 0 || n.DRAGPUs != 2 || n.Product != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("node GPUs %d used %d DRA %d product %q; want 2 free whole GPUs of NVIDIA-A100-SXM4-80GB",
			n.GPUs, n.UsedGPUs, n.DRAGPUs, n.Product)
	}
	// 7 published, 1 tainted; the other tenant's and the pod's partitions used
	if m := n.MIG[r1g]; m.Allocatable != 6 || m.Used != 2 || n.FreeMIG(r1g) != 4 {
		t.Errorf("MIG %s = %+v, want 6 allocatable (one tainted), 2 used (another claim, the pod)", r1g, m)
	}
	if _, ok := n.MIG[r3g]; ok {
		t.Errorf("MIG %s = %+v: no class maps it, want it reported only", r3g, n.MIG[r3g])
	}
	if n.DRAMIG[r1g] != 7 || n.DRAMIG[r3g] != 2 || n.DRAMIGClasses[r1g] != "mig-1g.10gb.nvidia.com" || n.DRAMIGClasses[r3g] != "" {
		t.Errorf("DRAMIG %v classes %v", n.DRAMIG, n.DRAMIGClasses)
	}
	if p := c.Pools(); len(p) != 2 || p[1].Resource != r1g || p[1].Capacity != 6 || p[1].Free != 4 {
		t.Errorf("pools = %+v, want a100 whole GPUs and 6 x 1g.10gb, 4 free", p)
	}
	if got := dra.ExtendedMIG("m1"); len(got) != 1 || got[r1g] != (MIGResource{Allocatable: 6, Used: 1}) {
		t.Errorf("ExtendedMIG = %+v, want %s: 6 allocatable, 1 held by another claim (the pod's is counted by the pod)", got, r1g)
	}

	// Without the class, the partitions are reported only.
	dra.Classes = []*resourcev1.DeviceClass{gpuClass(DriverGPU)}
	n = BuildDRA("dra", []*corev1.Node{testnode.New("m1").Obj()}, nil, DefaultLabelKeys(), dra).Nodes[0]
	if len(n.MIG) != 0 || n.DRAMIG[r1g] != 7 || len(n.DRAMIGClasses) != 0 {
		t.Errorf("without a class: MIG %v DRAMIG %v classes %v; want no MIG shape, 7 partitions reported", n.MIG, n.DRAMIG, n.DRAMIGClasses)
	}
	if got := dra.ExtendedMIG("m1"); len(got) != 0 {
		t.Errorf("ExtendedMIG without a class = %v", got)
	}
}

// TestBuildDRAMIGClassSelects: the mapping class's CEL selectors decide
// which partitions serve the resource; a class selecting other partitions
// offers nothing. A MIG-only node takes its product from the partitions.
func TestBuildDRAMIGClassSelects(t *testing.T) {
	const r1g = "nvidia.com/mig-1g.10gb"
	var devs []resourcev1.Device
	for i := range 3 {
		devs = append(devs, staticMIG(0, "1g.10gb", i))
	}
	wrong := migClass("3g.40gb")
	wrong.Spec.ExtendedResourceName = ptr.To(r1g) // maps 1g.10gb to 3g.40gb partitions
	dra := DRA{Slices: []*resourcev1.ResourceSlice{slice("m", "m", 1, devs...)}, Classes: []*resourcev1.DeviceClass{wrong}}
	n := BuildDRA("dra", []*corev1.Node{testnode.New("m").Obj()}, nil, DefaultLabelKeys(), dra).Nodes[0]
	if len(n.MIG) != 0 || n.DRAMIG[r1g] != 3 {
		t.Errorf("class selecting 3g.40gb: MIG %v DRAMIG %v, want none offered, 3 reported", n.MIG, n.DRAMIG)
	}
	right := migClass("1g.10gb")
	right.CreationTimestamp = metav1.Unix(100, 0) // newer than wrong: wins
	dra.Classes = append(dra.Classes, right)
	n = BuildDRA("dra", []*corev1.Node{testnode.New("m").Obj()}, nil, DefaultLabelKeys(), dra).Nodes[0]
	if n.MIG[r1g].Allocatable != 3 || n.DRAMIGClasses[r1g] != right.Name || n.GPUs != 0 || n.DRAClass != "" ||
		n.Product != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("node = %+v, want 3 x %s behind %s, no whole GPU, the partitions' product", n, r1g, right.Name)
	}
}

// TestBuildDRAPartitionableMIGNotOffered: partitions that share a counter
// set with other devices (KEP-4815: every possible partition of a GPU, and
// the GPU itself) are never MIG shapes, with or without a mapping class:
// the hub books counts per resource and could book the same GPU twice.
// One allocated, even by a pod's extended-resource claim, makes its GPU
// used. Likewise a static partition whose parent is published whole.
func TestBuildDRAPartitionableMIGNotOffered(t *testing.T) {
	const r1g = "nvidia.com/mig-1g.10gb"
	withParent := staticMIG(1, "1g.10gb", 0) // its parent GPU-1 is published whole too
	dra := DRA{
		Slices: []*resourcev1.ResourceSlice{
			slice("p", "p", 1, draGPU(0, a100, 85899345920, "gpu-0-counter-set"),
				draMIG("gpu-0-mig-1g10gb-0", "1g.10gb", "gpu-0-counter-set"),
				draMIG("gpu-0-mig-1g10gb-1", "1g.10gb", "gpu-0-counter-set"),
				draGPU(1, a100, 85899345920, ""), withParent,
				// partitions of a GPU not published whole still overlap each other
				draMIG("gpu-2-mig-1g10gb-0", "1g.10gb", "gpu-2-counter-set"),
				draMIG("gpu-2-mig-2g20gb-0-1", "2g.20gb", "gpu-2-counter-set")),
		},
		Claims: []*resourcev1.ResourceClaim{
			claim("extended-0", true, "p", "gpu-0-mig-1g10gb-1"),
			claim("extended-1", true, "p", withParent.Name),
		},
		Classes: []*resourcev1.DeviceClass{gpuClass(DriverGPU), migClass("1g.10gb"), migClass("2g.20gb")},
	}
	n := BuildDRA("dra", []*corev1.Node{testnode.New("p").Obj()}, nil, DefaultLabelKeys(), dra).Nodes[0]
	if len(n.MIG) != 0 || n.DRAMIG[r1g] != 4 {
		t.Errorf("MIG %v DRAMIG %v: want no MIG shape, 4 x 1g.10gb reported", n.MIG, n.DRAMIG)
	}
	if n.GPUs != 2 || n.UsedGPUs != 2 {
		t.Errorf("GPUs %d used %d: want both whole GPUs used (a partition of each allocated)", n.GPUs, n.UsedGPUs)
	}
}
