// SPDX-License-Identifier: Apache-2.0

package inventory

// The names of the built-in topology presets.
const (
	// PresetGFD reads GPU Feature Discovery's nvidia.com/gpu.clique as the
	// NVLink domain and topology.kubernetes.io/{rack,block,zone}.
	PresetGFD = "gfd"
	// PresetTopographV1 reads Topograph v1: accelerator.topograph.run/domain
	// as the NVLink domain, fabric.topograph.run/tier-0 (the leaf switch) as
	// the rack, tier-1 (spine) as the block and tier-2 as the zone.
	PresetTopographV1 = "topograph-v1"
	// PresetNVIDIANetwork reads the Topograph keys before v1:
	// network.topology.nvidia.com/{accelerator,leaf,spine,core}.
	PresetNVIDIANetwork = "nvidia-network"
	// PresetNVIDIANetworkBlock reads the oldest Topograph keys:
	// network.topology.nvidia.com/{accelerator,block,spine,datacenter}, where
	// block names the leaf switch.
	PresetNVIDIANetworkBlock = "nvidia-network-block"
	// PresetGKE reads GKE's cloud.google.com/gce-topology-{subblock,block}
	// as rack and block.
	PresetGKE = "gke"
	// PresetEKS reads EKS's topology.k8s.aws/network-node-layer-{3,2} as rack
	// and block (three-layer instance types).
	PresetEKS = "eks"
	// PresetAuto is no preset: the agent picks the first of DetectionOrder
	// whose keys its GPU nodes carry.
	PresetAuto = "auto"
)

const (
	labelZone = "topology.kubernetes.io/zone"

	labelTopographDomain = "accelerator.topograph.run/domain"
	labelTopographTier0  = "fabric.topograph.run/tier-0"
	labelTopographTier1  = "fabric.topograph.run/tier-1"
	labelTopographTier2  = "fabric.topograph.run/tier-2"

	labelNVNetAccelerator = "network.topology.nvidia.com/accelerator"
	labelNVNetLeaf        = "network.topology.nvidia.com/leaf"
	labelNVNetSpine       = "network.topology.nvidia.com/spine"
	labelNVNetCore        = "network.topology.nvidia.com/core"
	labelNVNetBlock       = "network.topology.nvidia.com/block"
	labelNVNetDatacenter  = "network.topology.nvidia.com/datacenter"

	labelGKEBlock    = "cloud.google.com/gce-topology-block"
	labelGKESubblock = "cloud.google.com/gce-topology-subblock"

	labelEKSLayer2 = "topology.k8s.aws/network-node-layer-2"
	labelEKSLayer3 = "topology.k8s.aws/network-node-layer-3"
)

// Preset is a built-in topology map.
type Preset struct {
	// Name is what --topology-preset takes.
	Name string
	// Keys is the map.
	Keys LabelKeys
	// Detect are the keys auto-detection looks for: a preset is picked when
	// one GPU node carries one of them. They are the keys that tell the
	// labelling apart; the zone key and, for cloud presets, GFD's clique
	// (which any GFD cluster carries) are not among them.
	Detect []string
}

// presets lists the built-in presets in DetectionOrder: the most specific
// labelling first, GFD's generic keys last.
var presets = []Preset{
	{Name: PresetTopographV1,
		Keys:   LabelKeys{NVLink: labelTopographDomain, Rack: labelTopographTier0, Block: labelTopographTier1, Zone: labelTopographTier2},
		Detect: []string{labelTopographDomain, labelTopographTier0, labelTopographTier1}},
	{Name: PresetNVIDIANetwork,
		Keys:   LabelKeys{NVLink: labelNVNetAccelerator, Rack: labelNVNetLeaf, Block: labelNVNetSpine, Zone: labelNVNetCore},
		Detect: []string{labelNVNetLeaf, labelNVNetCore}},
	{Name: PresetNVIDIANetworkBlock,
		Keys:   LabelKeys{NVLink: labelNVNetAccelerator, Rack: labelNVNetBlock, Block: labelNVNetSpine, Zone: labelNVNetDatacenter},
		Detect: []string{labelNVNetAccelerator, labelNVNetBlock, labelNVNetSpine, labelNVNetDatacenter}},
	{Name: PresetGKE,
		Keys:   LabelKeys{NVLink: LabelGPUClique, Rack: labelGKESubblock, Block: labelGKEBlock, Zone: labelZone},
		Detect: []string{labelGKESubblock, labelGKEBlock}},
	{Name: PresetEKS,
		Keys:   LabelKeys{NVLink: LabelGPUClique, Rack: labelEKSLayer3, Block: labelEKSLayer2, Zone: labelZone},
		Detect: []string{labelEKSLayer3, labelEKSLayer2}},
	{Name: PresetGFD,
		Keys:   DefaultLabelKeys(),
		Detect: []string{LabelGPUClique, DefaultLabelKeys().Rack, DefaultLabelKeys().Block}},
}

// Presets returns the built-in presets in detection order.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// DetectionOrder returns the preset names in the order auto-detection tries them.
func DetectionOrder() []string {
	out := make([]string, len(presets))
	for i, p := range presets {
		out[i] = p.Name
	}
	return out
}

// LookupPreset returns the named preset.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}
