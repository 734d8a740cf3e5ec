// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

func TestBuildNodes(t *testing.T) {
	tests := []struct {
		profile      string
		nodes        int
		wantGPU      int64
		wantProduct  string
		wantRacks    int
		wantCliques  int
		wantResource string
		wantRes      int64
	}{
		{"hgx-h100", 16, 8, "NVIDIA-H100-80GB-HBM3", 2, 0, ResourceGPU, 8},
		{"gb200-nvl72", 36, 4, "NVIDIA-GB200", 2, 2, ResourceGPU, 4},
		{"gb200-nvl72", 40, 4, "NVIDIA-GB200", 3, 3, ResourceGPU, 4},
		{"a100-mig", 16, 2, "NVIDIA-A100-SXM4-80GB", 2, 0, ResourceMIG1g10gb, 28},
		{"a100-mig", 3, 2, "NVIDIA-A100-SXM4-80GB", 1, 0, ResourceMIG3g40gb, 4},
		{"l4-shared", 16, 0, "NVIDIA-L4", 2, 0, ResourceGPUShared, 16},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			p, err := LookupProfile(tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			nodes := BuildNodes("c1", "local", p, tt.nodes)
			if len(nodes) != tt.nodes {
				t.Fatalf("got %d nodes, want %d", len(nodes), tt.nodes)
			}
			racks, cliques, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, n := range nodes {
				names[n.Name] = true
				if got := n.Status.Allocatable.Name(ResourceGPU, "").Value(); got != tt.wantGPU {
					t.Errorf("%s: %s = %d, want %d", n.Name, ResourceGPU, got, tt.wantGPU)
				}
				if got := n.Status.Capacity.Name(corev1.ResourceName(tt.wantResource), "").Value(); got != tt.wantRes {
					t.Errorf("%s: %s = %d, want %d", n.Name, tt.wantResource, got, tt.wantRes)
				}
				if n.Labels[LabelGPUProduct] != tt.wantProduct || n.Annotations[AnnotationKWOKNode] != "fake" {
					t.Errorf("%s: labels %v annotations %v", n.Name, n.Labels, n.Annotations)
				}
				for _, k := range []string{LabelGPUCount, LabelGPUMemory, LabelGPUFamily, LabelMIGCapable, LabelRack, LabelBlock, LabelZone} {
					if n.Labels[k] == "" {
						t.Errorf("%s: missing label %s", n.Name, k)
					}
				}
				racks[n.Labels[LabelRack]] = true
				if c := n.Labels[LabelGPUClique]; c != "" {
					cliques[c] = true
				}
			}
			if len(names) != tt.nodes || len(racks) != tt.wantRacks || len(cliques) != tt.wantCliques {
				t.Errorf("distinct names %d, racks %d, cliques %d; want %d, %d, %d",
					len(names), len(racks), len(cliques), tt.nodes, tt.wantRacks, tt.wantCliques)
			}
		})
	}
}

func TestCliqueID(t *testing.T) {
	tests := []struct {
		a, b     string
		ra, rb   int
		wantSame bool
	}{
		{"gb200-2", "gb200-2", 0, 0, true},
		{"gb200-2", "gb200-2", 0, 1, false},
		{"gb200-2", "gb200-3", 0, 0, false},
	}
	for _, tt := range tests {
		a, b := CliqueID(tt.a, tt.ra), CliqueID(tt.b, tt.rb)
		if (a == b) != tt.wantSame {
			t.Errorf("CliqueID(%s,%d)=%s CliqueID(%s,%d)=%s, same=%v want %v", tt.a, tt.ra, a, tt.b, tt.rb, b, a == b, tt.wantSame)
		}
		uuid, clique, ok := strings.Cut(a, ".")
		if !ok || len(uuid) != 36 || clique == "" {
			t.Errorf("CliqueID %q is not <clusterUUID>.<cliqueId>", a)
		}
	}
}

func TestLookupProfile(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
	}{{"hgx-h100", false}, {"gb200-nvl72", false}, {"a100-mig", false}, {"h100", true}, {"", true}}
	for _, tt := range tests {
		p, err := LookupProfile(tt.name)
		if (err != nil) != tt.wantErr {
			t.Errorf("LookupProfile(%q) error = %v, wantErr %v", tt.name, err, tt.wantErr)
		}
		if err == nil && p.DefaultNodes < 16 {
			t.Errorf("profile %s has %d default nodes, want at least 16", tt.name, p.DefaultNodes)
		}
	}
}

func TestBuildNodesTopographV1(t *testing.T) {
	p, err := LookupProfile("hgx-h100-topograph")
	if err != nil {
		t.Fatal(err)
	}
	racks := map[string]int{}
	for _, n := range BuildNodes("c1", "local", p, 16) {
		for _, k := range []string{LabelRack, LabelBlock, LabelZone, LabelGPUClique} {
			if v, ok := n.Labels[k]; ok {
				t.Errorf("%s carries %s=%s; the profile labels topology only with Topograph v1 keys", n.Name, k, v)
			}
		}
		for _, k := range []string{LabelTopographTier0, LabelTopographTier1, LabelTopographTier2} {
			if n.Labels[k] == "" {
				t.Errorf("%s: missing label %s", n.Name, k)
			}
		}
		racks[n.Labels[LabelTopographTier0]]++
	}
	if len(racks) != 2 || racks["c1-r000"] != 8 || racks["c1-r001"] != 8 {
		t.Errorf("tier-0 (rack) domains = %v, want two of 8 nodes", racks)
	}
}

// TestSharedProfileInventory: the l4-shared nodes, as GFD and the device
// plugin label them, are shared GPUs in the inventory: 4 physical GPUs of
// 4 replicas each, 16 requestable shares, no whole GPU, one shared pool.
func TestSharedProfileInventory(t *testing.T) {
	p, err := LookupProfile("l4-shared")
	if err != nil {
		t.Fatal(err)
	}
	c := fedinv.Build("c1", BuildNodes("c1", "local", p, 2), nil, fedinv.DefaultLabelKeys())
	want := fedinv.SharedGPUs{Strategy: fedinv.SharingTimeSlicing, Replicas: 4, Resource: fedinv.ResourceGPUShared,
		GPUs: 4, Allocatable: 16}
	for _, n := range c.Nodes {
		if n.GPUs != 0 || n.Shared == nil || *n.Shared != want {
			t.Errorf("%s: %d whole GPUs, shared %+v; want 0, %+v", n.Name, n.GPUs, n.Shared, want)
		}
	}
	if pools := c.Pools(); len(pools) != 1 || pools[0].Name != "l4-shared" || pools[0].Capacity != 32 {
		t.Errorf("pools %+v, want one l4-shared pool of 32 shares", pools)
	}
}
