// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	corev1 "k8s.io/api/core/v1"
)

// MIGResource is the allocatable and used count of one MIG slice resource on a node.
type MIGResource struct {
	// Allocatable is the node's allocatable count of the resource.
	Allocatable int `json:"allocatable"`
	// Used is the sum of requests of the non-terminated pods on the node.
	Used int `json:"used,omitempty"`
}

// Free returns the slices neither used nor over-committed (never negative).
func (m MIGResource) Free() int { return max(0, m.Allocatable-m.Used) }

// Node is one GPU node of a cluster as the scheduler needs to see it.
type Node struct {
	// Name is the Kubernetes node name.
	Name string `json:"name"`
	// Product is the GPU model from nvidia.com/gpu.product ("" if unlabelled).
	Product string `json:"product,omitempty"`
	// MemoryMiB is the memory of one GPU from nvidia.com/gpu.memory.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// CapacityGPUs is the node's capacity of nvidia.com/gpu; the difference to
	// GPUs is what the device plugin reports unhealthy.
	CapacityGPUs int `json:"capacityGPUs,omitempty"`
	// GPUs is the node's allocatable nvidia.com/gpu.
	GPUs int `json:"gpus"`
	// UsedGPUs is the sum of nvidia.com/gpu requests of all non-terminated pods
	// bound to the node, whoever created them.
	UsedGPUs int `json:"usedGPUs,omitempty"`
	// DRAGPUs is the whole GPUs the node's ResourceSlices of the GPU DRA
	// driver (gpu.nvidia.com) publish. They are in CapacityGPUs and GPUs
	// only when DRAClass is set.
	DRAGPUs int `json:"draGPUs,omitempty"`
	// DRAClass is the DeviceClass that maps nvidia.com/gpu to the node's DRA
	// GPUs (spec.extendedResourceName), through which the cluster's
	// kube-scheduler gives member pods devices; "" when none does.
	DRAClass string `json:"draClass,omitempty"`
	// DRADevices describes the node's DRA GPUs for device requests (nil
	// without any).
	DRADevices *DRADevices `json:"draDevices,omitempty"`
	// MIG maps a MIG resource name (nvidia.com/mig-1g.10gb) to its counts.
	// On a DRA node it includes the driver's static MIG partitions a
	// DeviceClass maps to the resource (DRAMIGClasses).
	MIG map[string]MIGResource `json:"mig,omitempty"`
	// DRAMIG counts the MIG partitions the node's ResourceSlices of the GPU
	// DRA driver publish, per MIG resource, whatever their state; they are
	// in MIG only where DRAMIGClasses names a class for the resource.
	DRAMIG map[string]int `json:"draMIG,omitempty"`
	// DRAMIGClasses names, per MIG resource, the DeviceClass that maps it to
	// the node's DRA partitions (spec.extendedResourceName).
	DRAMIGClasses map[string]string `json:"draMIGClasses,omitempty"`
	// Shared is the node's time-sliced or MPS GPUs (nil without sharing;
	// shared.go). Their shares are not in GPUs.
	Shared *SharedGPUs `json:"shared,omitempty"`
	// Clique is the multi-node NVLink domain from the cluster's NVLink key
	// (gfd preset: nvidia.com/gpu.clique; "" if none).
	Clique string `json:"clique,omitempty"`
	// Rack, Block and Zone come from the cluster's LabelKeys ("" if unlabelled).
	Rack  string `json:"rack,omitempty"`
	Block string `json:"block,omitempty"`
	Zone  string `json:"zone,omitempty"`
	// NodePool is the node's node pool in its cluster: the first of
	// v1alpha1.NodePoolLabelKeys it carries ("" if none), which GPU pools
	// select nodes by (docs/pools.md).
	NodePool string `json:"nodePool,omitempty"`
	// Ready is the node's Ready condition.
	Ready bool `json:"ready"`
	// Unschedulable is true for a cordoned node.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Taints are the node's taints, as the scheduler must match tolerations to them.
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// Schedulable reports whether new pods may land on the node: Ready and not cordoned.
func (n *Node) Schedulable() bool { return n.Ready && !n.Unschedulable }

// FreeGPUs returns the whole GPUs a new pod could get on the node: zero on a
// node that is not schedulable, never negative.
func (n *Node) FreeGPUs() int {
	if !n.Schedulable() {
		return 0
	}
	return max(0, n.GPUs-n.UsedGPUs)
}

// FreeMIG returns the free slices of one MIG resource, zero on a node that is
// not schedulable.
func (n *Node) FreeMIG(resource string) int {
	if !n.Schedulable() {
		return 0
	}
	return n.MIG[resource].Free()
}

// NVLinkDomain returns the node's NVLink domain: its clique, or the node
// itself when the cluster states no multi-node clique.
func (n *Node) NVLinkDomain() string {
	if n.Clique != "" {
		return "clique:" + n.Clique
	}
	return "node:" + n.Name
}

// DomainOf returns the name of the node's domain at a level. A node without
// the label for the level is a domain of its own ("node:<name>"): topology the
// cluster does not state is never invented.
func (n *Node) DomainOf(l Level) string {
	var v string
	switch l {
	case LevelNVLink:
		return n.NVLinkDomain()
	case LevelNode:
		return "node:" + n.Name
	case LevelRack:
		v = n.Rack
	case LevelBlock:
		v = n.Block
	case LevelCluster:
		return "cluster"
	}
	if v == "" {
		return "node:" + n.Name
	}
	return string(l) + ":" + v
}
