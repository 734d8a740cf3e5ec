// SPDX-License-Identifier: Apache-2.0

package devfleet

// Node label keys and resource names as NVIDIA GPU Feature Discovery (GFD),
// the NVIDIA device plugin and Kubernetes' well-known topology labels write them.
const (
	// LabelGPUProduct is the GPU model, e.g. NVIDIA-H100-80GB-HBM3.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelGPUCount is the number of full GPUs on the node.
	LabelGPUCount = "nvidia.com/gpu.count"
	// LabelGPUMemory is the memory of one GPU in MiB.
	LabelGPUMemory = "nvidia.com/gpu.memory"
	// LabelGPUFamily is the GPU architecture family, e.g. hopper.
	LabelGPUFamily = "nvidia.com/gpu.family"
	// LabelGPUClique names the NVLink domain partition: <clusterUUID>.<cliqueId>.
	LabelGPUClique = "nvidia.com/gpu.clique"
	// LabelGPUMachine is the system model.
	LabelGPUMachine = "nvidia.com/gpu.machine"
	// LabelGPUPresent marks a node with NVIDIA GPUs.
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelComputeMajor and LabelComputeMinor are the CUDA compute capability.
	LabelComputeMajor = "nvidia.com/gpu.compute.major"
	LabelComputeMinor = "nvidia.com/gpu.compute.minor"
	// LabelMIGCapable says whether the GPUs support MIG.
	LabelMIGCapable = "nvidia.com/mig.capable"
	// LabelMIGStrategy is the device plugin's MIG strategy (none, single, mixed).
	LabelMIGStrategy = "nvidia.com/mig.strategy"

	// LabelZone, LabelBlock and LabelRack are the topology levels Shoal's
	// placement engine reads by default.
	LabelZone  = "topology.kubernetes.io/zone"
	LabelBlock = "topology.kubernetes.io/block"
	LabelRack  = "topology.kubernetes.io/rack"
	// LabelTopographTier0..2 are Topograph v1's fabric tiers, tier-0 the
	// leaf switch closest to the node; LabelTopographDomain its accelerator
	// (NVLink) domain.
	LabelTopographTier0  = "fabric.topograph.run/tier-0"
	LabelTopographTier1  = "fabric.topograph.run/tier-1"
	LabelTopographTier2  = "fabric.topograph.run/tier-2"
	LabelTopographDomain = "accelerator.topograph.run/domain"
	// LabelRegion is the cluster's region.
	LabelRegion = "topology.kubernetes.io/region"
	// LabelProfile names the fleet profile a node was created from.
	LabelProfile = "fleet.shoal.dev/profile"
	// LabelFleetCluster is the label each cluster's overlay of the dev fleet's
	// GitOps repository puts on what it applies: the workload cluster's name.
	LabelFleetCluster = "fleet.shoal.dev/cluster"

	// AnnotationKWOKNode marks a node KWOK manages; the fleet's kwok selects it.
	AnnotationKWOKNode = "kwok.x-k8s.io/node"

	// ResourceGPU is a full GPU as the device plugin advertises it.
	ResourceGPU = "nvidia.com/gpu"
	// ResourceMIG1g10gb and ResourceMIG3g40gb are MIG slices under the mixed strategy.
	ResourceMIG1g10gb = "nvidia.com/mig-1g.10gb"
	ResourceMIG3g40gb = "nvidia.com/mig-3g.40gb"
	// ResourceGPUShared is one share of a time-sliced or MPS GPU, as the
	// device plugin advertises it with renameByDefault.
	ResourceGPUShared = "nvidia.com/gpu.shared"
)

// MIGLabel returns the GFD label key for one attribute of a MIG profile under
// the mixed strategy, e.g. MIGLabel("1g.10gb", "count") is nvidia.com/mig-1g.10gb.count.
func MIGLabel(profile, attr string) string { return "nvidia.com/mig-" + profile + "." + attr }
