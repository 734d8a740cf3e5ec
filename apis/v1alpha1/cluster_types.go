// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Cluster is a registered workload cluster.
// +kubebuilder:object:root=true
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec is what the fleet operator sets on a cluster.
type ClusterSpec struct {
	// UID is the cluster's identity, the UID of its kube-system namespace;
	// a cluster cannot register twice.
	UID string `json:"uid"`
	// Unschedulable (cordon) keeps new gangs off the cluster.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Drain (shoal cluster drain) cordons the cluster and moves every gang
	// with a member on it elsewhere, with the job's preemption grace and
	// without counting a restart. Uncordoning ends it.
	Drain bool `json:"drain,omitempty"`
	// DrainedNodes (shoal node drain) are workload nodes that take no new
	// members and whose gangs are moved elsewhere like a cluster drain's.
	DrainedNodes []string `json:"drainedNodes,omitempty"`
	// GitOps is where the cluster's configuration comes from.
	GitOps *GitOpsSource `json:"gitops,omitempty"`
}

// ClusterState is the hub's summary of a cluster.
type ClusterState string

// The cluster states.
const (
	// ClusterPending: registered, no inventory yet.
	ClusterPending ClusterState = "Pending"
	// ClusterReady: the agent reports and the cluster takes gangs.
	ClusterReady ClusterState = "Ready"
	// ClusterNotReady: the agent's lease or session lapsed.
	ClusterNotReady ClusterState = "NotReady"
	// ClusterCordoned: healthy, but no new gangs (spec.unschedulable).
	ClusterCordoned ClusterState = "Cordoned"
	// ClusterDraining: cordoned (spec.drain) and moving its gangs away; once
	// none is left the state is Cordoned with the Ready reason Drained.
	ClusterDraining ClusterState = "Draining"
	// ClusterLost: silent for longer than the fence timeout plus the margin (its agent has fenced itself); its gangs follow onClusterLoss.
	ClusterLost ClusterState = "Lost"
)

// ClusterStatus is what the hub observed about a cluster.
type ClusterStatus struct {
	// State summarises the cluster.
	State ClusterState `json:"state,omitempty"`
	// Conditions with reasons and messages (Ready, InventoryCurrent, GitOpsReady…).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Inventory summarises the cluster's GPUs.
	Inventory *InventorySummary `json:"inventory,omitempty"`
	// GitOps is the applied configuration.
	GitOps *GitOpsStatus `json:"gitops,omitempty"`
	// AgentVersion is the version of the cluster's shoal-agent.
	AgentVersion string `json:"agentVersion,omitempty"`
	// LastHeartbeat is when the agent last reached the hub.
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// LastHubClusterContact is the last heartbeat that said the agent
	// reaches the hub cluster (nil: none yet, or an agent that does not
	// say). The hub force-deletes a member hanging in deletion only after
	// such a heartbeat, or once this is older than the fence timeout plus
	// the margin (hub/dispatch fencewait.go).
	LastHubClusterContact *metav1.Time `json:"lastHubClusterContact,omitempty"`
	// RegisteredTime is when the cluster registered.
	RegisteredTime *metav1.Time `json:"registeredTime,omitempty"`
}

// InventorySummary is a cluster's GPU capacity in a few numbers; the full
// inventory by shape lives in the hub's inventory store.
type InventorySummary struct {
	// Generation of the inventory report summarised.
	Generation int64 `json:"generation,omitempty"`
	// Nodes is the number of GPU nodes.
	Nodes int32 `json:"nodes,omitempty"`
	// GPUs is the number of GPUs; Free and Unhealthy are parts of it.
	GPUs int32 `json:"gpus,omitempty"`
	// FreeGPUs is the number of allocatable, unused GPUs.
	FreeGPUs int32 `json:"freeGPUs,omitempty"`
	// UnhealthyGPUs is the number of GPUs that cannot be used.
	UnhealthyGPUs int32 `json:"unhealthyGPUs,omitempty"`
	// Products maps a GPU product to its number of GPUs.
	Products map[string]int32 `json:"products,omitempty"`
	// Topology says which node labels the agent reads as the topology of
	// the nodes (absent from agents that do not report it).
	Topology *TopologySummary `json:"topology,omitempty"`
}

// TopologySummary is the topology map a cluster's agent reads its GPU
// nodes' NVLink domain, rack, block and zone with.
type TopologySummary struct {
	// Source is how the map was chosen: auto (detected from the GPU nodes'
	// labels), preset (named by --topology-preset) or map (--topology-map).
	Source string `json:"source,omitempty"`
	// Preset is the preset used; empty for a map or when detection found none.
	Preset string `json:"preset,omitempty"`
	// NVLinkKey, RackKey, BlockKey and ZoneKey are the node label keys read
	// at each level; an empty key is a level the cluster does not state.
	NVLinkKey string `json:"nvlinkKey,omitempty"`
	RackKey   string `json:"rackKey,omitempty"`
	BlockKey  string `json:"blockKey,omitempty"`
	ZoneKey   string `json:"zoneKey,omitempty"`
	// Message is set when the cluster has GPU nodes but none carries the
	// keys: its topology is unknown, and placement treats every node as
	// its own NVLink domain, rack and block.
	Message string `json:"message,omitempty"`
}
