// SPDX-License-Identifier: Apache-2.0

package inventory

// The names of NVIDIA's ComputeDomain API (k8s-dra-driver-gpu, its
// compute-domain part): a namespaced custom resource whose controller
// creates the ResourceClaimTemplate of the domain's IMEX channel and
// starts IMEX daemons on the nodes where a channel claim is prepared
// (docs/compute-domains.md).
const (
	// ComputeDomainGroup and ComputeDomainVersion are the API group and
	// version the agent detects.
	ComputeDomainGroup   = "resource.nvidia.com"
	ComputeDomainVersion = "v1beta1"
	// ComputeDomainResource is the resource name, ComputeDomainKind the kind.
	ComputeDomainResource = "computedomains"
	ComputeDomainKind     = "ComputeDomain"
	// ComputeDomainStatusReady is the value of status.status (and of a
	// node's status in status.nodes) once the domain's daemons run.
	ComputeDomainStatusReady = "Ready"
	// ComputeDomainChannelClass is the DeviceClass of a domain's channel
	// claims; ComputeDomainDriver the driver publishing the channels.
	ComputeDomainChannelClass = "compute-domain-default-channel.nvidia.com"
	ComputeDomainDriver       = "compute-domain.nvidia.com"
)
