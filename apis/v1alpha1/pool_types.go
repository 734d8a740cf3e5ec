// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GPUPool is a named set of the fleet's GPU nodes (docs/pools.md): the nodes
// of the clusters ClusterSelector matches, of the products GPUProducts
// names, in the node pools NodePools names (the node label
// LabelNodePool, or the cloud providers' node-pool labels). Queues bound to
// pools (QueueSpec.Pools) place their jobs only on their pools' nodes. A
// pool can be cordoned (no new placements on its nodes), drained (its
// nodes drained in their clusters: running gangs there are requeued), and
// marked scale-to-zero (the hub publishes its idle nodes for an
// autoscaler).
// +kubebuilder:object:root=true
type GPUPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GPUPoolSpec   `json:"spec"`
	Status GPUPoolStatus `json:"status,omitempty"`
}

// GPUPoolSpec chooses a pool's nodes and what may happen on them.
type GPUPoolSpec struct {
	// ClusterSelector chooses the clusters by their labels (and
	// LabelClusterName); nil: every cluster.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// GPUProducts are the GPU products (nvidia.com/gpu.product) of its
	// nodes; empty: any.
	GPUProducts []string `json:"gpuProducts,omitempty"`
	// NodePools are node-pool names (a node's LabelNodePool, or its
	// provider's node-pool label); empty: any node.
	NodePools []string `json:"nodePools,omitempty"`
	// Cordoned: no new gang is placed on the pool's nodes.
	Cordoned bool `json:"cordoned,omitempty"`
	// Drain: the pool is cordoned and its nodes drained in their clusters
	// (running gangs with members there are requeued).
	Drain bool `json:"drain,omitempty"`
	// ScaleToZero: the pool's idle nodes are published (status.idleNodes,
	// the metric shoal_pool_idle_nodes) for an autoscaler or provider to
	// release.
	ScaleToZero bool `json:"scaleToZero,omitempty"`
}

// GPUPoolStatus is what the hub last saw of a pool.
type GPUPoolStatus struct {
	// Clusters are the clusters with nodes in the pool.
	Clusters []string `json:"clusters,omitempty"`
	// Nodes, GPUs, UsedGPUs and FreeGPUs count its nodes and whole GPUs.
	Nodes    int32 `json:"nodes"`
	GPUs     int32 `json:"gpus"`
	UsedGPUs int32 `json:"usedGPUs"`
	FreeGPUs int32 `json:"freeGPUs"`
	// IdleNodes are its nodes with no GPU in use ("cluster/node"), with
	// the time they were first seen idle, when ScaleToZero is set.
	IdleNodes []IdleNode `json:"idleNodes,omitempty"`
	// Queues are the queues bound to it.
	Queues []string `json:"queues,omitempty"`
	// Drained are the nodes ("cluster/node") the pool's drain marked
	// drained in their clusters, cleared when the drain ends.
	Drained []string `json:"drained,omitempty"`
	// UpdateTime is when the status was computed.
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// IdleNode is a node of a scale-to-zero pool with no GPU in use.
type IdleNode struct {
	Cluster string      `json:"cluster"`
	Node    string      `json:"node"`
	Since   metav1.Time `json:"since"`
}

// Well-known names of pools.
const (
	// LabelNodePool names a node's node pool in its cluster; without it
	// the providers' keys NodePoolLabelKeys are read.
	LabelNodePool = Prefix + "node-pool"
)

// NodePoolLabelKeys are the node labels a node's pool is read from, in
// order: Shoal's, then GKE's, EKS's, AKS's and Karpenter's.
var NodePoolLabelKeys = []string{LabelNodePool, "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
	"kubernetes.azure.com/agentpool", "karpenter.sh/nodepool"}

// ValidateGPUPool checks a pool.
func ValidateGPUPool(p *GPUPool) error {
	errs := validateTypeMeta(p.TypeMeta, KindGPUPool)
	errs = append(errs, validateObjectMeta(&p.ObjectMeta, ValidatePoolName)...)
	sp := field.NewPath("spec")
	if sel := p.Spec.ClusterSelector; sel != nil {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(sp.Child("clusterSelector"), sel, err.Error()))
		}
	}
	for i, np := range p.Spec.NodePools {
		if np == "" || len(np) > 63 {
			errs = append(errs, field.Invalid(sp.Child("nodePools").Index(i), np, "must be a label value of 1 to 63 characters"))
		}
	}
	for i, pr := range p.Spec.GPUProducts {
		if pr == "" || len(pr) > 63 {
			errs = append(errs, field.Invalid(sp.Child("gpuProducts").Index(i), pr, "must be a product label value of 1 to 63 characters"))
		}
	}
	return NewInvalidError(KindGPUPool, p.Name, errs)
}

// ValidatePoolName checks a pool name: a DNS label.
func ValidatePoolName(name string, p *field.Path) field.ErrorList {
	return ValidateJobName(name, p)
}

// validateQueuePools checks a queue's pool names.
func validateQueuePools(pools []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range pools {
		errs = append(errs, ValidatePoolName(name, p.Index(i))...)
		if slices.Contains(pools[:i], name) {
			errs = append(errs, field.Duplicate(p.Index(i), name))
		}
	}
	if len(pools) > 32 {
		errs = append(errs, field.TooMany(p, len(pools), 32))
	}
	return errs
}

// EffectivePools returns the pools a queue's jobs may use: those of the
// nearest queue on its path (itself first) that names any; nil: anywhere.
// specs maps queue names to their specs.
func EffectivePools(queue string, specs func(string) (*QueueSpec, bool)) []string {
	for q := queue; q != ""; {
		if s, ok := specs(q); ok && len(s.Pools) > 0 {
			return s.Pools
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			break
		}
		q = q[:i]
	}
	return nil
}
