// SPDX-License-Identifier: Apache-2.0

package pools

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

func fleet() ([]inventory.Cluster, map[string]map[string]string) {
	node := func(name, product, pool string, gpus, used int) inventory.Node {
		return inventory.Node{Name: name, Product: product, NodePool: pool, GPUs: gpus, CapacityGPUs: gpus, UsedGPUs: used, Ready: true}
	}
	return []inventory.Cluster{
			{Name: "east", Nodes: []inventory.Node{node("e1", "H100", "train", 8, 8), node("e2", "H100", "train", 8, 0), node("e3", "L4", "serve", 4, 1)}},
			{Name: "west", Nodes: []inventory.Node{node("w1", "H100", "train", 8, 0)}},
		}, map[string]map[string]string{
			"east": {"region": "us"}, "west": {"region": "eu"},
		}
}

func TestStatusCountsThePoolsNodes(t *testing.T) {
	invs, labels := fleet()
	now := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	p := &v1alpha1.GPUPool{ObjectMeta: metav1.ObjectMeta{Name: "train"}, Spec: v1alpha1.GPUPoolSpec{
		GPUProducts: []string{"H100"}, NodePools: []string{"train"}, ScaleToZero: true}}
	st, err := Status(p, invs, labels, []string{"research"}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 3 || st.GPUs != 24 || st.UsedGPUs != 8 || st.FreeGPUs != 16 || len(st.Clusters) != 2 {
		t.Fatalf("status %+v: want 3 nodes, 24 GPUs, 8 used, 16 free, 2 clusters", st)
	}
	if len(st.IdleNodes) != 2 || st.IdleNodes[0].Node != "e2" || st.IdleNodes[1].Node != "w1" {
		t.Fatalf("idle nodes %+v: want e2 and w1", st.IdleNodes)
	}
	// The idle time carries over from the previous status.
	later := metav1.NewTime(now.Add(time.Minute))
	st2, _ := Status(p, invs, labels, nil, &st, later)
	if !st2.IdleNodes[0].Since.Equal(&now) {
		t.Fatalf("idle since %s, want the first time seen %s", st2.IdleNodes[0].Since, now)
	}
	// A cluster selector on the region and the hub's name label.
	p.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	if st, _ := Status(p, invs, labels, nil, nil, now); st.Nodes != 1 || st.Clusters[0] != "west" {
		t.Fatalf("region eu: %+v", st)
	}
	p.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelClusterName: "east"}}
	p.Spec.ScaleToZero = false
	if st, _ := Status(p, invs, labels, nil, nil, now); st.Nodes != 2 || len(st.IdleNodes) != 0 {
		t.Fatalf("cluster east, no scale to zero: %+v", st)
	}
}

func TestFilterIsThePoolInPlacementTerms(t *testing.T) {
	p := &v1alpha1.GPUPool{ObjectMeta: metav1.ObjectMeta{Name: "serve"}, Spec: v1alpha1.GPUPoolSpec{NodePools: []string{"serve"}}}
	m, err := NewMatcher(p)
	if err != nil {
		t.Fatal(err)
	}
	f := m.Filter([]string{"east"})
	if len(f.Clusters) != 1 || len(f.NodePools) != 1 || f.NodePools[0] != "serve" || len(f.Products) != 0 {
		t.Fatalf("filter %+v", f)
	}
}

func TestVirtualNodesOfAPool(t *testing.T) {
	invs, labels := fleet()
	ps := []*v1alpha1.GPUPool{
		{ObjectMeta: metav1.ObjectMeta{Name: "serve"}, Spec: v1alpha1.GPUPoolSpec{NodePools: []string{"serve"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Spec: v1alpha1.GPUPoolSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}},
	}
	got := vnodePools(ps, invs, labels)
	l4 := "east/" + inventory.PoolName("L4", inventory.ResourceGPU)
	h100East := "east/" + inventory.PoolName("H100", inventory.ResourceGPU)
	h100West := "west/" + inventory.PoolName("H100", inventory.ResourceGPU)
	if len(got[l4]) != 1 || got[l4][0] != "serve" || len(got[h100East]) != 0 || len(got[h100West]) != 1 || got[h100West][0] != "eu" {
		t.Fatalf("virtual nodes' pools %v", got)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelPoolPrefix + "old": "true", LabelPoolPrefix + "eu": "true"}}}
	p := poolLabelPatch(n, []string{"eu", "serve"})
	if len(p) != 2 || p[LabelPoolPrefix+"old"] != nil || p[LabelPoolPrefix+"serve"] != "true" {
		t.Fatalf("patch %v: want old removed and serve added", p)
	}
	if _, ok := p[LabelPoolPrefix+"old"]; !ok {
		t.Fatalf("patch %v does not remove the stale label", p)
	}
	n.Labels = map[string]string{LabelPoolPrefix + "eu": "true"}
	if p := poolLabelPatch(n, []string{"eu"}); p != nil {
		t.Fatalf("labels already right, patch %v", p)
	}
}
