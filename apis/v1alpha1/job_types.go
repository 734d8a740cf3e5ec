// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Job is a gang of members that the hub places, all or none, on the
// fleet's GPUs: identical members (spec.gang and spec.template), or several
// roles, each with its own template, count and per-member request
// (spec.roles).
// +kubebuilder:object:root=true
type Job struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   JobSpec   `json:"spec"`
	Status JobStatus `json:"status,omitempty"`
}

// JobSpec is what the user asks for. It is immutable once submitted.
type JobSpec struct {
	// Queue is the hierarchical queue (org/team/project) the job is charged to.
	Queue string `json:"queue"`
	// PriorityClass orders the job against others; default batch.
	PriorityClass PriorityClass `json:"priorityClass,omitempty"`
	// Gang is the number of members and what each needs, for a job of
	// identical members. Exactly one of gang (with template) and roles is set.
	Gang Gang `json:"gang,omitzero"`
	// Roles are the kinds of member of a job whose members differ (launcher
	// and workers, master and workers), in order: member indices run over
	// the roles in this order. The roles are placed, committed and restarted
	// as one gang.
	Roles []Role `json:"roles,omitempty"`
	// Placement constrains where the gang may run.
	Placement Placement `json:"placement,omitempty"`
	// FailurePolicy says how failures restart the gang.
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// RunPolicy says whether two copies of the gang may ever overlap:
	// AtMostOnce (default) or AtLeastOnce.
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`
	// Preemption says whether and how gracefully the job may be preempted.
	Preemption Preemption `json:"preemption,omitempty"`
	// Rendezvous is how the members find each other: the master port and
	// the processes each member runs (docs/rendezvous.md).
	Rendezvous Rendezvous `json:"rendezvous,omitempty"`
	// Template is the pod every member runs: a plain Kubernetes
	// PodTemplateSpec. It is set with gang and left out with roles.
	Template corev1.PodTemplateSpec `json:"template,omitzero"`
	// TTLSecondsAfterFinished is how long the hub keeps the job once it
	// finished (Succeeded, Failed or Cancelled) before it deletes it with
	// its records, like the Kubernetes Job field of the same name; unset:
	// the hub's --finished-job-ttl; 0: deleted as soon as it finished
	// (docs/retention.md).
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Role is one kind of member of a job with roles.
type Role struct {
	// Name is the role's name, a DNS-1123 label unique in the job
	// (launcher, master, worker). Members see it as SHOAL_ROLE and on the
	// label shoal.dev/role of their pods.
	Name string `json:"name"`
	// Members is the number of members of this role.
	Members int32 `json:"members"`
	// GPUsPerMember is the number of whole GPUs per member of this role; 0
	// (with no MIG) makes a CPU-only role. At most one of GPUsPerMember and
	// MIG is set, and at least one role of the job asks for GPUs.
	GPUsPerMember int32 `json:"gpusPerMember,omitempty"`
	// MIG asks for MIG slices instead of whole GPUs. Every GPU role of a job
	// asks for the same resource: whole GPUs, slices of one profile, or
	// shares of shared GPUs.
	MIG *MIGRequest `json:"mig,omitempty"`
	// Shared asks for shares of time-sliced or MPS GPUs instead of whole
	// GPUs (docs/shared-gpus.md).
	Shared *SharedGPURequest `json:"shared,omitempty"`
	// Template is the pod every member of this role runs.
	Template corev1.PodTemplateSpec `json:"template"`
}

// Gang is the all-or-nothing group of members.
type Gang struct {
	// Members is the number of pods; all are placed together or none.
	Members int32 `json:"members"`
	// GPUsPerMember is the number of whole GPUs (nvidia.com/gpu) per member.
	// Exactly one of GPUsPerMember, MIG and Shared is set.
	GPUsPerMember int32 `json:"gpusPerMember,omitempty"`
	// MIG asks for MIG slices instead of whole GPUs.
	MIG *MIGRequest `json:"mig,omitempty"`
	// Shared asks for shares of time-sliced or MPS GPUs
	// (nvidia.com/gpu.shared) instead of whole GPUs: for members that need
	// a fraction of a GPU (docs/shared-gpus.md). Not with devices.
	Shared *SharedGPURequest `json:"shared,omitempty"`
	// Devices asks for each member's gpusPerMember whole GPUs by Dynamic
	// Resource Allocation instead of the nvidia.com/gpu extended resource:
	// devices of a DeviceClass that match every selector, placed
	// node-exactly on nodes whose DRA GPUs match, and allocated in the
	// member cluster by a ResourceClaim the member's pod carries
	// (docs/dra.md). Not with mig.
	Devices *DeviceRequest `json:"devices,omitempty"`
	// ComputeDomain asks for one NVIDIA ComputeDomain (IMEX channel over
	// the multi-node NVLink fabric of a GB200 NVL72 rack) per NVLink
	// clique the gang's members land in: members are placed only on nodes
	// with a clique, in clusters that serve ComputeDomains, and never in a
	// clique where another compute-domain job holds nodes
	// (docs/compute-domains.md). Not with mig or shared.
	ComputeDomain bool `json:"computeDomain,omitempty"`
}

// DeviceRequest is a request for whole GPUs by Dynamic Resource Allocation,
// in the terms of a ResourceClaim's exactly request: a DeviceClass and CEL
// selectors a device must all match. The count is the gang's gpusPerMember.
type DeviceRequest struct {
	// DeviceClassName is the DeviceClass of the member clusters the devices
	// come from (gpu.nvidia.com with NVIDIA's DRA driver). A node is a
	// candidate only where this class selects its GPUs.
	DeviceClassName string `json:"deviceClassName"`
	// Selectors are CEL selectors over the device (device.driver,
	// device.attributes, device.capacity), exactly as in a ResourceClaim:
	// a device must match every one, e.g.
	// device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0.
	Selectors []resourcev1.DeviceSelector `json:"selectors,omitempty"`
}

// MIGRequest is a number of MIG slices of one profile per member, the
// resource nvidia.com/mig-<profile>.
type MIGRequest struct {
	// Profile is the MIG profile, e.g. "1g.10gb" or "3g.40gb".
	Profile string `json:"profile"`
	// PerMember is the number of slices per member; default 1.
	PerMember int32 `json:"perMember,omitempty"`
}

// ResourceName is the Kubernetes resource the request stands for.
func (m MIGRequest) ResourceName() corev1.ResourceName {
	return corev1.ResourceName(migResourcePrefix + m.Profile)
}

// migResourcePrefix is the prefix of every MIG slice resource.
const migResourcePrefix = "nvidia.com/mig-"

// SharedGPURequest is a number of shares of time-sliced or MPS GPUs per
// member, the resource nvidia.com/gpu.shared that the NVIDIA device plugin
// advertises with renameByDefault.
type SharedGPURequest struct {
	// PerMember is the number of shares per member; default 1. A share is
	// 1/replicas of a GPU of the node it lands on.
	PerMember int32 `json:"perMember,omitempty"`
	// Strategy is the sharing the member needs: time-slicing or mps; empty
	// accepts either.
	Strategy SharingStrategy `json:"strategy,omitempty"`
}

// SharingStrategy is how a shared GPU is shared, as GPU Feature Discovery
// labels it (nvidia.com/gpu.sharing-strategy).
type SharingStrategy string

// Sharing strategies a SharedGPURequest may ask for.
const (
	SharingTimeSlicing SharingStrategy = "time-slicing"
	SharingMPS         SharingStrategy = "mps"
)

// ResourceGPUShared is the extended resource of one share of a shared GPU.
const ResourceGPUShared corev1.ResourceName = "nvidia.com/gpu.shared"

// ResourceGPU is the extended resource of a whole NVIDIA GPU.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// TopologyLevel is a level of the GPU topology; levels nest, narrowest first:
// node, nvlink (an NVLink domain, the node on HGX, a clique of nodes on
// GB200 NVL72), rack, block, cluster.
type TopologyLevel string

// The topology levels, narrowest first.
const (
	TopologyNode    TopologyLevel = "node"
	TopologyNVLink  TopologyLevel = "nvlink"
	TopologyRack    TopologyLevel = "rack"
	TopologyBlock   TopologyLevel = "block"
	TopologyCluster TopologyLevel = "cluster"
)

// TopologyLevels lists the levels, narrowest first.
var TopologyLevels = []TopologyLevel{TopologyNode, TopologyNVLink, TopologyRack, TopologyBlock, TopologyCluster}

// Rank is the level's position in TopologyLevels, or -1 for an unknown level.
func (l TopologyLevel) Rank() int {
	for i, x := range TopologyLevels {
		if x == l {
			return i
		}
	}
	return -1
}

// PlacementPolicy chooses between packing gangs tightly and spreading them.
type PlacementPolicy string

// The placement policies.
const (
	// BinPack fills the fullest domains first, keeping large holes free (default).
	BinPack PlacementPolicy = "BinPack"
	// Spread prefers the emptiest domains.
	Spread PlacementPolicy = "Spread"
)

// Placement constrains where a gang runs.
type Placement struct {
	// MaxClusters is how many clusters the gang may span; default 1.
	MaxClusters int32 `json:"maxClusters,omitempty"`
	// ClusterSelector selects eligible clusters by their labels; nil selects all.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// GPUProducts, when set, restricts members to these GPU products
	// (values of nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3).
	GPUProducts []string `json:"gpuProducts,omitempty"`
	// Topology asks for members to share a topology domain.
	Topology Topology `json:"topology,omitempty"`
	// Policy is BinPack (default) or Spread.
	Policy PlacementPolicy `json:"policy,omitempty"`
}

// Topology is the gang's topology rule.
type Topology struct {
	// Required is the level whose single domain must hold the whole gang.
	Required TopologyLevel `json:"required,omitempty"`
	// Preferred is a narrower level the scheduler tries to keep the gang in.
	Preferred TopologyLevel `json:"preferred,omitempty"`
}

// ClusterLossAction says what happens to a gang whose cluster is lost.
type ClusterLossAction string

// The cluster-loss actions.
const (
	// Reschedule places the gang again elsewhere after the fence timeout (default).
	Reschedule ClusterLossAction = "Reschedule"
	// Fail fails the job.
	Fail ClusterLossAction = "Fail"
)

// RunPolicy says whether two copies of a gang may overlap when its cluster
// stops reporting.
type RunPolicy string

// The run policies.
const (
	// AtMostOnce never runs two copies at once: a gang on a silent cluster
	// moves only once the cluster is Lost, after the fence timeout plus the
	// margin, when its agent has stopped the members (default).
	AtMostOnce RunPolicy = "AtMostOnce"
	// AtLeastOnce moves a gang as soon as its cluster is NotReady (after the
	// hub's grace), without waiting for the fence: the old copy may still
	// run until its agent fences.
	AtLeastOnce RunPolicy = "AtLeastOnce"
)

// FailurePolicy says how failures restart the gang.
type FailurePolicy struct {
	// MaxRestarts is how many times a failed member restarts the whole gang
	// before the job fails; default 3 (when the policy is left out).
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
	// OnClusterLoss is Reschedule (default) or Fail.
	OnClusterLoss ClusterLossAction `json:"onClusterLoss,omitempty"`
}

// Preemption says whether a job may be preempted and how long it has to
// checkpoint first.
type Preemption struct {
	// Preemptible defaults by priority class: true below production.
	Preemptible *bool `json:"preemptible,omitempty"`
	// GracePeriodSeconds is the time members get to checkpoint after the
	// preemption notice; default 30.
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
}

// Rendezvous is the job's part of the rendezvous contract
// (docs/rendezvous.md): every member gets MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE, RANK and the torchrun PET_* variables built from it.
type Rendezvous struct {
	// Port is MASTER_PORT, the port member 0 listens on; default 29500.
	Port int32 `json:"port,omitempty"`
	// ProcessesPerMember is the number of processes each member starts
	// (LOCAL_WORLD_SIZE, PET_NPROC_PER_NODE); WORLD_SIZE is members times
	// this. Default: the member's accelerator count (gang.gpusPerMember, or
	// gang.mig.perMember), one process per device.
	ProcessesPerMember int32 `json:"processesPerMember,omitempty"`
}
