// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Shared GPUs as the NVIDIA device plugin configures them (time-slicing or
// MPS): each physical GPU is advertised replicas times, as
// nvidia.com/gpu.shared with renameByDefault, else still as nvidia.com/gpu;
// GPU Feature Discovery labels the node with the replicas and the strategy
// and keeps nvidia.com/gpu.count physical.
const (
	// ResourceGPUShared is the renamed resource of a shared GPU
	// (renameByDefault: true): one share of a time-sliced or MPS GPU.
	ResourceGPUShared = "nvidia.com/gpu.shared"
	// LabelGPUReplicas is the number of shares each physical GPU is advertised as.
	LabelGPUReplicas = "nvidia.com/gpu.replicas"
	// LabelGPUSharingStrategy is time-slicing, mps or none.
	LabelGPUSharingStrategy = "nvidia.com/gpu.sharing-strategy"
)

// Sharing strategies of the NVIDIA device plugin (LabelGPUSharingStrategy).
const (
	SharingTimeSlicing = "time-slicing"
	SharingMPS         = "mps"
	SharingNone        = "none"
)

// SharedGPUs is a node's time-sliced or MPS GPUs.
type SharedGPUs struct {
	// Strategy is time-slicing or mps ("" when the node does not say).
	Strategy string `json:"strategy,omitempty"`
	// Replicas is the shares each physical GPU is advertised as.
	Replicas int `json:"replicas"`
	// Resource is the extended resource the shares are advertised as:
	// nvidia.com/gpu.shared, or nvidia.com/gpu when the device plugin does
	// not rename it (then Shoal members cannot ask for them: Requestable).
	Resource string `json:"resource"`
	// GPUs is the physical GPUs behind the shares (nvidia.com/gpu.count).
	GPUs int `json:"gpus,omitempty"`
	// Allocatable is the node's allocatable shares.
	Allocatable int `json:"allocatable"`
	// Used is the shares requested by the non-terminated pods on the node.
	Used int `json:"used,omitempty"`
}

// Requestable reports whether members can ask for the shares: they are
// advertised under their own name, nvidia.com/gpu.shared, so that no
// request for a whole nvidia.com/gpu is given one.
func (s *SharedGPUs) Requestable() bool { return s != nil && s.Resource == ResourceGPUShared }

// unrenamed reports whether the shares are advertised as nvidia.com/gpu.
func (s *SharedGPUs) unrenamed() bool { return s != nil && s.Resource == ResourceGPU }

// Free returns the shares neither used nor over-committed (never negative).
func (s *SharedGPUs) Free() int {
	if s == nil {
		return 0
	}
	return max(0, s.Allocatable-s.Used)
}

// FreeShared returns the free requestable shares of the node, zero on a
// node that is not schedulable or whose shares are not renamed.
func (n *Node) FreeShared() int {
	if !n.Schedulable() || !n.Shared.Requestable() {
		return 0
	}
	return n.Shared.Free()
}

// sharedFrom reads a node's shared GPUs: nvidia.com/gpu.shared allocatable,
// or nvidia.com/gpu on a node GFD labels with more than one replica and a
// sharing strategy (the device plugin did not rename the resource). In the
// second case n's whole GPUs are shares and become 0: a gang asking for
// whole GPUs must never be placed on them.
func sharedFrom(kn *corev1.Node, n *Node) {
	l := kn.Labels
	replicas, _ := strconv.Atoi(l[LabelGPUReplicas])
	strategy := l[LabelGPUSharingStrategy]
	if strategy == SharingNone {
		strategy = ""
	}
	physical, _ := strconv.Atoi(l[LabelGPUCount])
	s := &SharedGPUs{Strategy: strategy, Replicas: replicas, Resource: ResourceGPUShared, GPUs: physical,
		Allocatable: quantity(kn.Status.Allocatable, ResourceGPUShared)}
	switch {
	case s.Allocatable > 0:
	case replicas > 1 && strategy != "" && n.GPUs+n.CapacityGPUs > 0:
		s.Resource, s.Allocatable = ResourceGPU, n.GPUs
		n.GPUs, n.CapacityGPUs = 0, 0
	default:
		return
	}
	if s.Replicas < 1 {
		s.Replicas = 1
		if physical > 0 && s.Allocatable >= physical {
			s.Replicas = s.Allocatable / physical
		}
	}
	if s.GPUs == 0 {
		s.GPUs = s.Allocatable / s.Replicas
	}
	n.Shared = s
}
