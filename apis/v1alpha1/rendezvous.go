// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "fmt"

// The environment every member's containers get: the rendezvous contract
// of docs/rendezvous.md, compatible with torchrun (the PET_* variables are
// the defaults of its flags) and with Kubeflow Trainer's PyTorch env.
const (
	// EnvMasterAddr is MasterAddr(job, namespace): member 0's name.
	EnvMasterAddr = "MASTER_ADDR"
	// EnvMasterPort is spec.rendezvous.port.
	EnvMasterPort = "MASTER_PORT"
	// EnvWorldSize is members × processes per member: every process of the
	// job.
	EnvWorldSize = "WORLD_SIZE"
	// EnvRank is the global rank of the member's first process,
	// NODE_RANK × processes per member.
	EnvRank = "RANK"
	// EnvNodeRank is the member's index in the gang.
	EnvNodeRank = "NODE_RANK"
	// EnvLocalWorldSize is the processes per member.
	EnvLocalWorldSize = "LOCAL_WORLD_SIZE"
	// EnvPETNNodes is torchrun's --nnodes: the member count.
	EnvPETNNodes = "PET_NNODES"
	// EnvPETNodeRank is torchrun's --node-rank: the member's index.
	EnvPETNodeRank = "PET_NODE_RANK"
	// EnvPETMasterAddr is torchrun's --master-addr.
	EnvPETMasterAddr = "PET_MASTER_ADDR"
	// EnvPETMasterPort is torchrun's --master-port.
	EnvPETMasterPort = "PET_MASTER_PORT"
	// EnvPETNProcPerNode is torchrun's --nproc-per-node: processes per member.
	EnvPETNProcPerNode = "PET_NPROC_PER_NODE"
	// EnvJob is the job's name.
	EnvJob = "SHOAL_JOB"
	// EnvGangSize is the member count.
	EnvGangSize = "SHOAL_GANG_SIZE"
	// EnvMemberIndex is the member's index in the gang (= NODE_RANK).
	EnvMemberIndex = "SHOAL_MEMBER_INDEX"
	// EnvEpoch is the placement epoch the member belongs to.
	EnvEpoch = "SHOAL_EPOCH"
)

// ReservedEnvNames are the variables Shoal sets on every member container; a
// template that sets one itself is refused at submit.
var ReservedEnvNames = []string{
	EnvMasterAddr, EnvMasterPort, EnvWorldSize, EnvRank, EnvNodeRank, EnvLocalWorldSize,
	EnvPETNNodes, EnvPETNodeRank, EnvPETMasterAddr, EnvPETMasterPort, EnvPETNProcPerNode,
	EnvJob, EnvGangSize, EnvMemberIndex, EnvEpoch, EnvRole, EnvRoleIndex, EnvResumeURI, EnvResumeStep,
}

// DefaultMasterPort is MASTER_PORT when spec.rendezvous.port is unset (the
// port torchrun and PyTorch use by default).
const DefaultMasterPort int32 = 29500

// MaxProcessesPerMember bounds spec.rendezvous.processesPerMember.
const MaxProcessesPerMember = 1024

// The values of the EndpointSlice managed-by label
// (discoveryv1.LabelManagedBy) on the rendezvous EndpointSlices: the hub
// dispatcher writes the hub cluster's, each agent its mirror in its
// workload cluster. Neither is the endpointslice controller's value, so
// that controller leaves them alone.
const (
	SliceManagedByHub   = "shoal-hub"
	SliceManagedByAgent = "shoal-agent"
)

// MaxEndpointsPerSlice is how many members one rendezvous EndpointSlice
// lists (the Kubernetes limit); larger gangs get several slices.
const MaxEndpointsPerSlice = 1000

// MasterAddr is MASTER_ADDR: member 0's host name under the job's headless
// Service, qualified with the namespace, "<job>-0.<job>.<namespace>". A
// pod's DNS search path (<ns>.svc.<domain>, svc.<domain>, <domain>) turns
// it into <job>-0.<job>.<namespace>.svc.<domain> in every cluster,
// whatever that cluster's domain is.
func MasterAddr(job, namespace string) string {
	return MemberHostname(job, 0) + "." + ServiceName(job) + "." + namespace
}

// EndpointSliceName is the name of the k-th rendezvous EndpointSlice of a
// job (members k×MaxEndpointsPerSlice onwards), the same in the hub cluster
// and in every workload cluster.
func EndpointSliceName(job string, k int) string { return fmt.Sprintf("%s-rdv-%d", job, k) }

// ProcessesPerMember is the job's processes per member: the spec's value,
// or, when it is unset, its default: the member's accelerator count, at
// least 1; 1 for a job with roles, whose members need not have the same
// count (every member, CPU-only ones too, takes part in the rendezvous), and
// for shared GPUs (shares are of one device, not devices).
func (s *JobSpec) ProcessesPerMember() int32 {
	if s.Rendezvous.ProcessesPerMember > 0 {
		return s.Rendezvous.ProcessesPerMember
	}
	if _, n := s.Gang.Resource(); n > 0 && s.Gang.Shared == nil {
		return n
	}
	return 1
}
