// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

func TestAllocatable(t *testing.T) {
	// 16 real nodes of 8 GPUs: one with 4 free, three with 2, the rest full.
	busy := fedinv.Pool{Name: "h100", Resource: fedinv.ResourceGPU, Nodes: 16, Capacity: 128, Allocatable: 128,
		Free: 10, LargestNodeFree: 4, NodesByFree: map[int]int{4: 1, 2: 3, 0: 12}}
	tests := []struct {
		name string
		pool fedinv.Pool
		held int
		want int
	}{
		{"free only: what other pods use is not allocatable", busy, 0, 10},
		{"members' GPUs count: allocatable minus allocated is free", busy, 16, 26},
		{"never above capacity", fedinv.Pool{Capacity: 8, Free: 8}, 8, 8},
		{"an empty pool", fedinv.Pool{}, 0, 0},
		{"a cordoned node's member still holds its GPUs", fedinv.Pool{Capacity: 16, Allocatable: 8, Free: 0}, 8, 8},
	}
	for _, tt := range tests {
		if got := allocatable(tt.pool, tt.held); got != tt.want {
			t.Errorf("%s: allocatable = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPoolAnnotations(t *testing.T) {
	p := fedinv.Pool{Nodes: 16, Free: 10, LargestNodeFree: 4, NodesByFree: map[int]int{0: 12, 4: 1, 2: 3}}
	want := map[string]string{v1alpha1.AnnotationPoolNodes: "16", v1alpha1.AnnotationPoolFree: "10",
		v1alpha1.AnnotationPoolLargestNodeFree: "4", v1alpha1.AnnotationPoolNodesByFree: "4:1,2:3,0:12"}
	got := poolAnnotations(p)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("annotations = %v", got)
	}
	if s := nodesByFree(nil); s != "" {
		t.Errorf("no nodes = %q", s)
	}
}

// The node a pool publishes reads truthfully: capacity is every real GPU,
// allocatable what is free plus what members hold, the detail annotated.
func TestNodeStatusOfABusyPool(t *testing.T) {
	m := New(Config{Cluster: "eu1"})
	p := fedinv.Pool{Name: "h100", Resource: fedinv.ResourceGPU, Nodes: 16, Capacity: 128, Allocatable: 128,
		Free: 10, LargestNodeFree: 4, NodesByFree: map[int]int{4: 1, 2: 3, 0: 12}}
	np := newNodeProvider(m, m.nodeSpec(p, 10250), p)
	held := 0
	np.heldFn = func() int { return held }
	if a := np.node.Status.Allocatable[fedinv.ResourceGPU]; a.Value() != 10 {
		t.Errorf("registered allocatable = %d, want 10", a.Value())
	}
	held = 8
	np.set(p, true, "")
	c, a := np.node.Status.Capacity[fedinv.ResourceGPU], np.node.Status.Allocatable[fedinv.ResourceGPU]
	if c.Value() != 128 || a.Value() != 18 {
		t.Errorf("capacity/allocatable = %d/%d, want 128/18", c.Value(), a.Value())
	}
	if np.node.Annotations[v1alpha1.AnnotationPoolLargestNodeFree] != "4" || np.node.Annotations[v1alpha1.AnnotationPoolNodesByFree] != "4:1,2:3,0:12" {
		t.Errorf("annotations = %v", np.node.Annotations)
	}
	select {
	case <-np.changed:
	default:
		t.Error("a change of what members hold was not pushed")
	}
	p2 := p
	p2.NodesByFree = map[int]int{4: 1, 2: 2, 1: 2, 0: 11}
	p2.Free = 12
	np.set(p2, true, "")
	if np.node.Annotations[v1alpha1.AnnotationPoolNodesByFree] != "4:1,2:2,1:2,0:11" {
		t.Errorf("nodes by free = %q", np.node.Annotations[v1alpha1.AnnotationPoolNodesByFree])
	}
	if _, ok := np.node.Status.Capacity[corev1.ResourcePods]; !ok {
		t.Error("no pods capacity")
	}
}
