// SPDX-License-Identifier: Apache-2.0

package inventory

// Well-known label and resource names read from nodes. The GPU labels are the
// ones NVIDIA GPU Feature Discovery publishes.
const (
	// ResourceGPU is the whole-GPU extended resource of the NVIDIA device plugin.
	ResourceGPU = "nvidia.com/gpu"
	// ResourceMIGPrefix prefixes MIG slice resources, e.g. nvidia.com/mig-1g.10gb.
	ResourceMIGPrefix = "nvidia.com/mig-"
	// LabelGPUProduct names the GPU model, e.g. NVIDIA-H100-80GB-HBM3.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelGPUMemory is the memory of one GPU in MiB.
	LabelGPUMemory = "nvidia.com/gpu.memory"
	// LabelGPUCount is the number of physical GPUs on the node.
	LabelGPUCount = "nvidia.com/gpu.count"
	// LabelGPUClique names the multi-node NVLink domain (e.g. a GB200 NVL72
	// rack) as GFD writes it; the gfd topology preset reads it as the NVLink level.
	LabelGPUClique = "nvidia.com/gpu.clique"
)

// LabelKeys says which node labels carry the NVLink domain, rack, block and
// zone of a node: one cluster's topology map. They are configurable per
// cluster because there is no single convention (see Presets). An empty key
// means the cluster states nothing at that level: every node is a domain of
// its own there.
type LabelKeys struct {
	// NVLink is the label key naming a node's multi-node NVLink domain (clique).
	NVLink string `json:"nvlink,omitempty"`
	// Rack is the label key naming a node's rack (leaf switch).
	Rack string `json:"rack,omitempty"`
	// Block is the label key naming a node's block (a group of racks under one spine).
	Block string `json:"block,omitempty"`
	// Zone is the label key naming a node's zone.
	Zone string `json:"zone,omitempty"`
}

// DefaultLabelKeys returns the keys of the gfd preset: nvidia.com/gpu.clique
// and topology.kubernetes.io/{rack,block,zone}, which the local fleet uses.
func DefaultLabelKeys() LabelKeys {
	return LabelKeys{
		NVLink: LabelGPUClique,
		Rack:   "topology.kubernetes.io/rack",
		Block:  "topology.kubernetes.io/block",
		Zone:   "topology.kubernetes.io/zone",
	}
}

// IsZero reports whether no key is set.
func (k LabelKeys) IsZero() bool { return k == LabelKeys{} }

// list returns the set keys, tightest level first.
func (k LabelKeys) list() []string {
	var out []string
	for _, s := range []string{k.NVLink, k.Rack, k.Block, k.Zone} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
