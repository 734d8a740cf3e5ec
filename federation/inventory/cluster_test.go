// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func sample() Cluster {
	return Cluster{Name: "eu1", Generation: 3, Labels: map[string]string{"region": "eu"}, Nodes: []Node{
		{Name: "n1", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, UsedGPUs: 3, Rack: "r1", Block: "b1", Ready: true},
		{Name: "n2", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, Rack: "r1", Block: "b1", Ready: true},
		{Name: "n3", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, Rack: "r2", Block: "b1", Ready: true, Unschedulable: true},
		{Name: "n4", Product: "NVIDIA-GB200", GPUs: 4, Clique: "c1", Rack: "r3", Ready: true},
		{Name: "n5", Product: "NVIDIA-GB200", GPUs: 4, UsedGPUs: 4, Clique: "c1", Rack: "r3", Ready: true},
		{Name: "n6", Product: "NVIDIA-A100-SXM4-80GB", Ready: true,
			MIG: map[string]MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7, Used: 2}}},
	}}
}

func TestEqualAndHash(t *testing.T) {
	base := sample()
	tests := []struct {
		name   string
		mutate func(c *Cluster)
		equal  bool
	}{
		{"same", func(c *Cluster) {}, true},
		{"generation ignored", func(c *Cluster) { c.Generation = 99 }, true},
		{"used changed", func(c *Cluster) { c.Nodes[1].UsedGPUs = 1 }, false},
		{"cordoned", func(c *Cluster) { c.Nodes[0].Unschedulable = true }, false},
		{"taint", func(c *Cluster) { c.Nodes[0].Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}} }, false},
		{"mig used", func(c *Cluster) {
			c.Nodes[5].MIG = map[string]MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7, Used: 3}}
		}, false},
		{"label", func(c *Cluster) { c.Labels = map[string]string{"region": "us"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample()
			c.Nodes = append([]Node(nil), base.Nodes...)
			tt.mutate(&c)
			if got := base.Equal(c); got != tt.equal {
				t.Errorf("Equal = %v, want %v", got, tt.equal)
			}
			if got := base.Hash() == c.Hash(); got != tt.equal {
				t.Errorf("hash equal = %v, want %v", got, tt.equal)
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	c := sample()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Cluster
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !c.Equal(back) || back.Generation != c.Generation {
		t.Errorf("round trip changed the inventory:\n%s", b)
	}
}

func TestPools(t *testing.T) {
	got := sample().Pools()
	want := []Pool{
		{Name: "a100-80gb-mig-1g-10gb", Product: "NVIDIA-A100-SXM4-80GB", Resource: "nvidia.com/mig-1g.10gb",
			Nodes: 1, Capacity: 7, Allocatable: 7, Free: 5, LargestNodeFree: 5, NodesByFree: map[int]int{5: 1}},
		{Name: "gb200", Product: "NVIDIA-GB200", Resource: ResourceGPU, Nodes: 2, Capacity: 8, Allocatable: 8, Free: 4, LargestNodeFree: 4,
			NodesByFree: map[int]int{4: 1, 0: 1}},
		{Name: "h100-80gb", Product: "NVIDIA-H100-80GB-HBM3", Resource: ResourceGPU, Nodes: 3, Capacity: 24, Allocatable: 16, Free: 13, LargestNodeFree: 8,
			NodesByFree: map[int]int{8: 1, 5: 1, 0: 1}}, // n3 is cordoned: 0 free
	}
	if len(got) != len(want) {
		t.Fatalf("pools = %+v", got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("pool %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPoolName(t *testing.T) {
	tests := []struct{ product, res, want string }{
		{"NVIDIA-H100-80GB-HBM3", ResourceGPU, "h100-80gb"},
		{"NVIDIA-A100-SXM4-80GB", "nvidia.com/mig-1g.10gb", "a100-80gb-mig-1g-10gb"},
		{"NVIDIA GB200", ResourceGPU, "gb200"},
		{"", ResourceGPU, "gpu"},
		{"Tesla-T4", ResourceGPU, "t4"},
		{"NVIDIA-A-very-long-product-name-that-goes-on-and-on-forever", ResourceGPU, "a-very-long-product-name-that-goes-o"},
	}
	for _, tt := range tests {
		if got := PoolName(tt.product, tt.res); got != tt.want {
			t.Errorf("PoolName(%q, %q) = %q, want %q", tt.product, tt.res, got, tt.want)
		}
	}
}

func TestDomains(t *testing.T) {
	c := sample()
	tests := []struct {
		level Level
		want  []Domain
	}{
		{LevelRack, []Domain{
			{LevelRack, "rack:r1", 2, 16, 13, 8},
			{LevelRack, "rack:r3", 2, 8, 4, 4},
			{LevelRack, "node:n6", 1, 0, 0, 0},
			{LevelRack, "rack:r2", 1, 0, 0, 0},
		}},
		{LevelNVLink, []Domain{
			{LevelNVLink, "node:n2", 1, 8, 8, 8},
			{LevelNVLink, "node:n1", 1, 8, 5, 5},
			{LevelNVLink, "clique:c1", 2, 8, 4, 4},
			{LevelNVLink, "node:n3", 1, 0, 0, 0},
			{LevelNVLink, "node:n6", 1, 0, 0, 0},
		}},
		{LevelCluster, []Domain{{LevelCluster, "eu1", 6, 24, 17, 8}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.level), func(t *testing.T) {
			got := c.Domains(tt.level)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v", got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("%d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
