// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

func pod(node string, phase corev1.PodPhase, reqs ...map[string]int64) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	for _, r := range reqs {
		c := corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}
		for k, v := range r {
			c.Resources.Limits[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func gpu(n int64) map[string]int64 { return map[string]int64{ResourceGPU: n} }

func TestBuild(t *testing.T) {
	keys := DefaultLabelKeys()
	nodes := []*corev1.Node{
		testnode.New("b").Capacity(ResourceGPU, 8, 8).Label(LabelGPUProduct, "NVIDIA-H100-80GB-HBM3").Label(LabelGPUMemory, "81559").
			Label(keys.Rack, "r1").Label(keys.Block, "b1").Label(keys.Zone, "z1").Label(LabelGPUClique, "c1").Obj(),
		testnode.New("a").Capacity(ResourceGPU, 8, 7).Taint("dedicated").Obj(),
		testnode.New("cpu-only").Obj(),
		testnode.New("mig").Allocatable("nvidia.com/mig-1g.10gb", 7).Obj(),
		testnode.New("down").Capacity(ResourceGPU, 8, 8).NotReady().Obj(),
		testnode.New("cordoned").Capacity(ResourceGPU, 4, 4).Cordon().Obj(),
	}
	pods := []*corev1.Pod{
		pod("b", corev1.PodRunning, gpu(2), gpu(1)),
		pod("b", corev1.PodPending, gpu(1)),
		pod("b", corev1.PodSucceeded, gpu(4)),
		pod("b", corev1.PodFailed, gpu(4)),
		pod("", corev1.PodPending, gpu(8)),
		pod("a", corev1.PodRunning, map[string]int64{"cpu": 4}),
		pod("mig", corev1.PodRunning, map[string]int64{"nvidia.com/mig-1g.10gb": 3}),
	}
	c := Build("eu1", nodes, pods, keys)
	wantOrder := []string{"a", "b", "cordoned", "down", "mig"}
	if len(c.Nodes) != len(wantOrder) {
		t.Fatalf("nodes = %d, want %d", len(c.Nodes), len(wantOrder))
	}
	for i, n := range c.Nodes {
		if n.Name != wantOrder[i] {
			t.Errorf("node %d = %s, want %s", i, n.Name, wantOrder[i])
		}
	}
	tests := []struct {
		node                 string
		gpus, used, free     int
		ready, unschedulable bool
	}{
		{"a", 7, 0, 7, true, false},
		{"b", 8, 4, 4, true, false},
		{"cordoned", 4, 0, 0, true, true},
		{"down", 8, 0, 0, false, false},
		{"mig", 0, 0, 0, true, false},
	}
	for i, tt := range tests {
		n := c.Nodes[i]
		if n.GPUs != tt.gpus || n.UsedGPUs != tt.used || n.FreeGPUs() != tt.free ||
			n.Ready != tt.ready || n.Unschedulable != tt.unschedulable {
			t.Errorf("%s: got gpus=%d used=%d free=%d ready=%v unsched=%v, want %+v",
				tt.node, n.GPUs, n.UsedGPUs, n.FreeGPUs(), n.Ready, n.Unschedulable, tt)
		}
	}
	b := c.Nodes[1]
	if b.Product != "NVIDIA-H100-80GB-HBM3" || b.MemoryMiB != 81559 || b.Rack != "r1" ||
		b.Block != "b1" || b.Zone != "z1" || b.Clique != "c1" {
		t.Errorf("labels not read: %+v", b)
	}
	if a := c.Nodes[0]; a.CapacityGPUs != 8 || len(a.Taints) != 1 {
		t.Errorf("a: capacity=%d taints=%v", a.CapacityGPUs, a.Taints)
	}
	if m := c.Nodes[4].MIG["nvidia.com/mig-1g.10gb"]; m.Allocatable != 7 || m.Used != 3 || m.Free() != 4 {
		t.Errorf("mig = %+v", m)
	}
}

func TestPodGPURequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	lim := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	req := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"limits only", corev1.PodSpec{Containers: []corev1.Container{{Resources: lim(2)}, {Resources: lim(3)}}}, 5},
		{"requests", corev1.PodSpec{Containers: []corev1.Container{{Resources: req(4)}}}, 4},
		{"init bigger", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: lim(8)}},
			Containers: []corev1.Container{{Resources: lim(2)}}}, 8},
		{"sidecar adds", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: lim(1), RestartPolicy: &always}},
			Containers: []corev1.Container{{Resources: lim(2)}}}, 3},
		{"no gpu", corev1.PodSpec{Containers: []corev1.Container{{}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodGPURequests(&corev1.Pod{Spec: tt.spec})[ResourceGPU]
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPodGPURequestsPerResource: MIG slices follow the same rule as whole
// GPUs, each resource on its own.
func TestPodGPURequestsPerResource(t *testing.T) {
	const mig = "nvidia.com/mig-1g.10gb"
	rl := func(kv map[string]int64) corev1.ResourceRequirements {
		l := corev1.ResourceList{}
		for k, v := range kv {
			l[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		return corev1.ResourceRequirements{Limits: l}
	}
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Resources: rl(map[string]int64{mig: 5})}, {Resources: rl(map[string]int64{ResourceGPU: 1})}},
		Containers: []corev1.Container{{Resources: rl(map[string]int64{mig: 1, "cpu": 2})},
			{Resources: rl(map[string]int64{mig: 1, ResourceGPU: 2})}},
	}
	got := PodGPURequests(&corev1.Pod{Spec: spec})
	want := map[string]int64{mig: 5, ResourceGPU: 2}
	if len(got) != len(want) || got[mig] != want[mig] || got[ResourceGPU] != want[ResourceGPU] {
		t.Errorf("got %v, want %v", got, want)
	}
	for r, want := range map[string]bool{ResourceGPU: true, mig: true, "nvidia.com/gpu.shared": true, "nvidia.com/gpu.other": false, "cpu": false} {
		if IsGPUResource(r) != want {
			t.Errorf("IsGPUResource(%q) = %v", r, !want)
		}
	}
}

// TestBuildCountsGangMembers: Gangs counts, per gang epoch, the member
// pods bound and not terminated (the pods whose GPUs UsedGPUs counts):
// not a gated member without a node, a finished one, or a pod that is no
// member; the epoch is the label's, else the annotation's. A cluster
// without members has an empty map, not nil (nil: an agent before Gangs).
func TestBuildCountsGangMembers(t *testing.T) {
	member := func(node string, phase corev1.PodPhase, job, labelEpoch, annotationEpoch string) *corev1.Pod {
		p := pod(node, phase, gpu(1))
		p.Labels = map[string]string{v1alpha1.LabelJob: job}
		if labelEpoch != "" {
			p.Labels[v1alpha1.LabelEpoch] = labelEpoch
		}
		if annotationEpoch != "" {
			p.Annotations = map[string]string{v1alpha1.AnnotationEpoch: annotationEpoch}
		}
		return p
	}
	nodes := []*corev1.Node{testnode.New("a").Capacity(ResourceGPU, 8, 8).Obj()}
	pods := []*corev1.Pod{
		member("a", corev1.PodRunning, "train", "2", ""),
		member("a", corev1.PodPending, "train", "2", ""), // bound, not running yet: holds its GPU
		member("", corev1.PodPending, "train", "2", ""),  // gated: no node
		member("a", corev1.PodSucceeded, "train", "2", ""),
		member("a", corev1.PodRunning, "train", "1", ""), // the old epoch, terminating
		member("a", corev1.PodRunning, "infer", "", "3"),
		pod("a", corev1.PodRunning, gpu(1)), // no member
	}
	c := Build("eu1", nodes, pods, DefaultLabelKeys())
	want := map[string]int32{GangKey("train", 2): 2, GangKey("train", 1): 1, GangKey("infer", 3): 1}
	if !maps.Equal(c.Gangs, want) {
		t.Fatalf("gangs %v, want %v", c.Gangs, want)
	}
	if used := c.Nodes[0].UsedGPUs; used != 5 {
		t.Fatalf("used %d GPUs, want 5 (the bound pods)", used)
	}
	if empty := Build("eu1", nodes, nil, DefaultLabelKeys()); empty.Gangs == nil || len(empty.Gangs) != 0 {
		t.Fatalf("no members: gangs %#v, want an empty map", empty.Gangs)
	}
	moved := c
	moved.Gangs = map[string]int32{GangKey("train", 2): 1, GangKey("train", 1): 2, GangKey("infer", 3): 1}
	if moved.Hash() == c.Hash() || moved.Equal(c) {
		t.Fatal("a change of the gangs alone is not a change of the inventory")
	}
}
