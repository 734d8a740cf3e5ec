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
	// LabelGPUClique names the multi-node NVLink domain (e.g. a GB200 NVL72 rack).
	LabelGPUClique = "nvidia.com/gpu.clique"
)

// LabelKeys says which node labels carry the rack, block and zone of a node.
// They are configurable per cluster because there is no single convention.
type LabelKeys struct {
	// Rack is the label key naming a node's rack.
	Rack string `json:"rack"`
	// Block is the label key naming a node's block (a group of racks under one spine).
	Block string `json:"block"`
	// Zone is the label key naming a node's zone.
	Zone string `json:"zone"`
}

// DefaultLabelKeys returns the topology.kubernetes.io/{rack,block,zone} keys
// the local fleet and most providers use.
func DefaultLabelKeys() LabelKeys {
	return LabelKeys{
		Rack:  "topology.kubernetes.io/rack",
		Block: "topology.kubernetes.io/block",
		Zone:  "topology.kubernetes.io/zone",
	}
}
