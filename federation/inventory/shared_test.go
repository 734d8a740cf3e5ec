// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/test/builders/testnode"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// sharedNode is a node as the device plugin and GFD show it with a
// sharing config of 4 replicas: res is nvidia.com/gpu.shared when renamed.
func sharedNode(name, res, strategy string, physical int64) *testnode.Wrapper {
	return testnode.New(name).Capacity(corev1.ResourceName(res), 4*physical, 4*physical).
		Label(LabelGPUProduct, h100+"-SHARED").Label(LabelGPUCount, "2").
		Label(LabelGPUReplicas, "4").Label(LabelGPUSharingStrategy, strategy)
}

func TestBuildSharedGPUs(t *testing.T) {
	nodes := []*corev1.Node{
		sharedNode("renamed", ResourceGPUShared, SharingTimeSlicing, 2).Obj(),
		sharedNode("unrenamed", ResourceGPU, SharingMPS, 2).Obj(),
		testnode.New("whole").GPUs(8).Label(LabelGPUProduct, h100).Label(LabelGPUReplicas, "1").
			Label(LabelGPUSharingStrategy, SharingNone).Obj(),
	}
	shared := func(n int64) map[string]int64 { return map[string]int64{ResourceGPUShared: n} }
	pods := []*corev1.Pod{
		pod("renamed", corev1.PodRunning, shared(1), shared(2)),
		pod("renamed", corev1.PodSucceeded, shared(4)),
		pod("unrenamed", corev1.PodRunning, gpu(3)),
		pod("whole", corev1.PodRunning, gpu(2)),
	}
	c := Build("eu1", nodes, pods, DefaultLabelKeys())
	if len(c.Nodes) != 3 {
		t.Fatalf("nodes = %d, want 3 (a node with only shares is a GPU node)", len(c.Nodes))
	}
	renamed, unrenamed, whole := c.Nodes[0], c.Nodes[1], c.Nodes[2]

	want := SharedGPUs{Strategy: SharingTimeSlicing, Replicas: 4, Resource: ResourceGPUShared, GPUs: 2, Allocatable: 8, Used: 3}
	if renamed.Shared == nil || *renamed.Shared != want {
		t.Errorf("renamed: shared = %+v, want %+v", renamed.Shared, want)
	}
	if renamed.GPUs != 0 || renamed.FreeShared() != 5 || !renamed.Shared.Requestable() {
		t.Errorf("renamed: gpus %d, free shares %d, requestable %v; want 0, 5, true",
			renamed.GPUs, renamed.FreeShared(), renamed.Shared.Requestable())
	}

	// nvidia.com/gpu with 4 replicas is 8 shares, not 8 whole GPUs.
	want = SharedGPUs{Strategy: SharingMPS, Replicas: 4, Resource: ResourceGPU, GPUs: 2, Allocatable: 8, Used: 3}
	if unrenamed.Shared == nil || *unrenamed.Shared != want {
		t.Errorf("unrenamed: shared = %+v, want %+v", unrenamed.Shared, want)
	}
	if unrenamed.GPUs != 0 || unrenamed.CapacityGPUs != 0 || unrenamed.UsedGPUs != 0 || unrenamed.FreeGPUs() != 0 {
		t.Errorf("unrenamed: whole GPUs %d/%d used %d free %d, want all 0",
			unrenamed.GPUs, unrenamed.CapacityGPUs, unrenamed.UsedGPUs, unrenamed.FreeGPUs())
	}
	if unrenamed.FreeShared() != 0 {
		t.Errorf("unrenamed: free requestable shares = %d, want 0", unrenamed.FreeShared())
	}

	if whole.Shared != nil || whole.GPUs != 8 || whole.UsedGPUs != 2 {
		t.Errorf("whole: shared %+v gpus %d used %d, want nil, 8, 2", whole.Shared, whole.GPUs, whole.UsedGPUs)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestSharedPool(t *testing.T) {
	nodes := []*corev1.Node{
		sharedNode("s1", ResourceGPUShared, SharingTimeSlicing, 2).Label(LabelGPUProduct, h100).Obj(),
		sharedNode("s2", ResourceGPU, SharingTimeSlicing, 2).Label(LabelGPUProduct, h100).Obj(),
		testnode.New("w").GPUs(8).Label(LabelGPUProduct, h100).Obj(),
	}
	pods := []*corev1.Pod{pod("s1", corev1.PodRunning, map[string]int64{ResourceGPUShared: 3})}
	pools := Build("eu1", nodes, pods, DefaultLabelKeys()).Pools()
	got := map[string]Pool{}
	for _, p := range pools {
		got[p.Name] = p
	}
	sh, ok := got["h100-80gb-shared"]
	if !ok || sh.Resource != ResourceGPUShared || sh.Capacity != 8 || sh.Free != 5 || sh.Nodes != 1 {
		t.Errorf("shared pool = %+v (present %v), want nvidia.com/gpu.shared, 8 capacity, 5 free, 1 node", sh, ok)
	}
	// The unrenamed node's shares are neither whole GPUs nor a pool.
	if w := got["h100-80gb"]; w.Capacity != 8 || w.Nodes != 1 {
		t.Errorf("whole pool = %+v, want 8 GPUs on 1 node", w)
	}
	if len(pools) != 2 {
		t.Errorf("pools = %+v, want 2", pools)
	}
}

func TestPodGPURequestsCountsShares(t *testing.T) {
	p := pod("n", corev1.PodRunning, map[string]int64{ResourceGPUShared: 2, "cpu": 1})
	if got := PodGPURequests(p); len(got) != 1 || got[ResourceGPUShared] != 2 {
		t.Errorf("PodGPURequests = %v, want only %s: 2", got, ResourceGPUShared)
	}
}
