// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/test/builders/testnode"
)

func gpuNode(name string, labels map[string]string) *corev1.Node {
	w := testnode.New(name).GPUs(8)
	for k, v := range labels {
		w.Label(k, v)
	}
	return w.Obj()
}

// TestResolveAuto: auto-detection picks the first preset in detection order
// whose keys one GPU node carries, ignores CPU nodes and zone-only labels,
// and, with no match, reads no key and says so.
func TestResolveAuto(t *testing.T) {
	cpuWithRack := testnode.New("cpu").Label("topology.kubernetes.io/rack", "r1").Obj()
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		wantPreset string
		wantKeys   LabelKeys
		wantMsg    bool
	}{
		{name: "gfd, today's labels", wantPreset: PresetGFD, wantKeys: DefaultLabelKeys(),
			nodes: []*corev1.Node{gpuNode("a", map[string]string{"topology.kubernetes.io/rack": "r1", LabelGPUClique: "c.1"})}},
		{name: "gfd clique alone", wantPreset: PresetGFD, wantKeys: DefaultLabelKeys(),
			nodes: []*corev1.Node{gpuNode("a", map[string]string{LabelGPUClique: "c.1"})}},
		{name: "topograph v1 on one node of two", wantPreset: PresetTopographV1,
			wantKeys: LabelKeys{NVLink: "accelerator.topograph.run/domain", Rack: "fabric.topograph.run/tier-0",
				Block: "fabric.topograph.run/tier-1", Zone: "fabric.topograph.run/tier-2"},
			nodes: []*corev1.Node{gpuNode("a", nil), gpuNode("b", map[string]string{"fabric.topograph.run/tier-0": "s1"})}},
		{name: "topograph v1 wins over GFD's clique", wantPreset: PresetTopographV1,
			wantKeys: LabelKeys{NVLink: "accelerator.topograph.run/domain", Rack: "fabric.topograph.run/tier-0",
				Block: "fabric.topograph.run/tier-1", Zone: "fabric.topograph.run/tier-2"},
			nodes: []*corev1.Node{gpuNode("a", map[string]string{LabelGPUClique: "c.1", "accelerator.topograph.run/domain": "d1"})}},
		{name: "topograph before v1", wantPreset: PresetNVIDIANetwork,
			wantKeys: LabelKeys{NVLink: "network.topology.nvidia.com/accelerator", Rack: "network.topology.nvidia.com/leaf",
				Block: "network.topology.nvidia.com/spine", Zone: "network.topology.nvidia.com/core"},
			nodes: []*corev1.Node{gpuNode("a", map[string]string{"network.topology.nvidia.com/leaf": "l1", "network.topology.nvidia.com/spine": "s1"})}},
		{name: "oldest topograph keys", wantPreset: PresetNVIDIANetworkBlock,
			wantKeys: LabelKeys{NVLink: "network.topology.nvidia.com/accelerator", Rack: "network.topology.nvidia.com/block",
				Block: "network.topology.nvidia.com/spine", Zone: "network.topology.nvidia.com/datacenter"},
			nodes: []*corev1.Node{gpuNode("a", map[string]string{"network.topology.nvidia.com/block": "l1", "network.topology.nvidia.com/spine": "s1"})}},
		{name: "gke with GFD clique", wantPreset: PresetGKE,
			wantKeys: LabelKeys{NVLink: LabelGPUClique, Rack: "cloud.google.com/gce-topology-subblock",
				Block: "cloud.google.com/gce-topology-block", Zone: "topology.kubernetes.io/zone"},
			nodes: []*corev1.Node{gpuNode("a", map[string]string{LabelGPUClique: "c.1", "cloud.google.com/gce-topology-block": "b1"})}},
		{name: "eks", wantPreset: PresetEKS,
			wantKeys: LabelKeys{NVLink: LabelGPUClique, Rack: "topology.k8s.aws/network-node-layer-3",
				Block: "topology.k8s.aws/network-node-layer-2", Zone: "topology.kubernetes.io/zone"},
			nodes: []*corev1.Node{gpuNode("a", map[string]string{"topology.k8s.aws/network-node-layer-3": "nn-1"})}},
		{name: "zone alone is no topology", wantMsg: true,
			nodes: []*corev1.Node{gpuNode("a", map[string]string{"topology.kubernetes.io/zone": "z1"}), cpuWithRack}},
		{name: "no GPU node: nothing to report", nodes: []*corev1.Node{cpuWithRack}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TopologyChoice{}.Resolve(tt.nodes)
			if got.Source != TopologySourceAuto || got.Preset != tt.wantPreset || got.Keys != tt.wantKeys {
				t.Errorf("Resolve = %+v, want auto preset %q keys %+v", got, tt.wantPreset, tt.wantKeys)
			}
			if tt.wantMsg != (got.Message != "") {
				t.Errorf("message = %q, want one: %v", got.Message, tt.wantMsg)
			}
			if tt.wantMsg && !strings.Contains(got.Message, "no topology labels found on GPU nodes") {
				t.Errorf("message = %q", got.Message)
			}
			// Auto-detection is deterministic: the same nodes, reversed, pick the same.
			rev := append([]*corev1.Node(nil), tt.nodes...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if again := (TopologyChoice{Preset: PresetAuto}).Resolve(rev); again != got {
				t.Errorf("reversed nodes resolve to %+v, not %+v", again, got)
			}
		})
	}
}

// TestResolveExplicit: a named preset or a map is used as given, and
// reported as unmatched when no GPU node carries any of its keys.
func TestResolveExplicit(t *testing.T) {
	nodes := []*corev1.Node{gpuNode("a", map[string]string{"topology.kubernetes.io/rack": "r1"})}
	got := TopologyChoice{Preset: PresetTopographV1}.Resolve(nodes)
	if got.Source != TopologySourcePreset || got.Preset != PresetTopographV1 || got.Keys.Rack != "fabric.topograph.run/tier-0" ||
		!strings.Contains(got.Message, "no GPU node carries any of the keys") {
		t.Errorf("preset on unmatched nodes = %+v", got)
	}
	keys := LabelKeys{Rack: "topology.kubernetes.io/rack"}
	got = TopologyChoice{Map: &keys}.Resolve(nodes)
	if got.Source != TopologySourceMap || got.Preset != "" || got.Keys != keys || got.Message != "" {
		t.Errorf("matched map = %+v", got)
	}
}

func TestTopologyChoiceValidate(t *testing.T) {
	empty := LabelKeys{}
	keys := DefaultLabelKeys()
	for _, tt := range []struct {
		c  TopologyChoice
		ok bool
	}{
		{TopologyChoice{}, true},
		{TopologyChoice{Preset: PresetAuto}, true},
		{TopologyChoice{Preset: PresetEKS}, true},
		{TopologyChoice{Map: &keys}, true},
		{TopologyChoice{Preset: "bogus"}, false},
		{TopologyChoice{Map: &empty}, false},
		{TopologyChoice{Preset: PresetGFD, Map: &keys}, false},
	} {
		if err := tt.c.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", tt.c, err, tt.ok)
		}
	}
}

// TestBuildWithTopographKeys: Build reads the NVLink domain, rack, block and
// zone from the keys of the map, not from fixed names.
func TestBuildWithTopographKeys(t *testing.T) {
	p, _ := LookupPreset(PresetTopographV1)
	n := gpuNode("a", map[string]string{"accelerator.topograph.run/domain": "d1", "fabric.topograph.run/tier-0": "leaf1",
		"fabric.topograph.run/tier-1": "spine1", "fabric.topograph.run/tier-2": "core1", LabelGPUClique: "gfd.1",
		"topology.kubernetes.io/rack": "not-read"})
	c := Build("c1", []*corev1.Node{n}, nil, p.Keys)
	got := c.Nodes[0]
	if got.Clique != "d1" || got.Rack != "leaf1" || got.Block != "spine1" || got.Zone != "core1" {
		t.Errorf("node = %+v, want clique d1 rack leaf1 block spine1 zone core1", got)
	}
	if got.DomainOf(LevelRack) != "rack:leaf1" || got.DomainOf(LevelNVLink) != "clique:d1" {
		t.Errorf("domains %s %s", got.DomainOf(LevelRack), got.DomainOf(LevelNVLink))
	}
	c = Build("c1", []*corev1.Node{n}, nil, LabelKeys{})
	if got := c.Nodes[0]; got.Clique != "" || got.Rack != "" || got.DomainOf(LevelRack) != "node:a" {
		t.Errorf("no keys: node = %+v, want no topology", got)
	}
}

func TestParseTopologyMap(t *testing.T) {
	k, err := ParseTopologyMap("nvlink=a/n, rack=a/r,block=a/b,zone=a/z")
	if err != nil || k != (LabelKeys{NVLink: "a/n", Rack: "a/r", Block: "a/b", Zone: "a/z"}) {
		t.Errorf("ParseTopologyMap = %+v, %v", k, err)
	}
	for _, bad := range []string{"", ",", "rack=", "rack", "spine=x", "rack=a,rack=b"} {
		if _, err := ParseTopologyMap(bad); err == nil {
			t.Errorf("ParseTopologyMap(%q) accepted", bad)
		}
	}
}

// TestHashSeesTopology: a changed topology map is a changed inventory.
func TestHashSeesTopology(t *testing.T) {
	a := Cluster{Name: "c", Topology: &Topology{Source: TopologySourceAuto, Preset: PresetGFD, Keys: DefaultLabelKeys()}}
	b := a
	b.Topology = &Topology{Source: TopologySourceAuto, Preset: PresetTopographV1}
	if a.Hash() == b.Hash() || a.Equal(b) {
		t.Error("two topology maps hash or compare equal")
	}
}
