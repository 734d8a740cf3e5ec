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
	// Drain asks for the cluster's preemptible gangs to be moved elsewhere.
	Drain bool `json:"drain,omitempty"`
	// GitOps is where the cluster's configuration comes from.
	GitOps *GitOpsSource `json:"gitops,omitempty"`
}

// GitOpsSource names a cluster's configuration in Git. It carries the name
// of a Secret in the workload cluster, never credentials.
type GitOpsSource struct {
	// URL of the repository (https, http or ssh; no user info).
	URL string `json:"url"`
	// Ref is a branch, tag or commit; default branch main.
	Ref GitOpsRef `json:"ref,omitempty"`
	// Path of the kustomization in the repository.
	Path string `json:"path,omitempty"`
	// Interval between drift corrections.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// SecretRef names the Secret with the credentials in the agent's
	// namespace of the workload cluster.
	SecretRef string `json:"secretRef,omitempty"`
	// Prune deletes objects that left Git.
	Prune bool `json:"prune,omitempty"`
	// HealthTimeout bounds the wait for applied objects to become ready.
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
}

// GitOpsRef is a branch, a tag or a commit (a commit may go with a branch).
type GitOpsRef struct {
	// Branch to follow.
	Branch string `json:"branch,omitempty"`
	// Tag to check out.
	Tag string `json:"tag,omitempty"`
	// Commit (full SHA) to pin.
	Commit string `json:"commit,omitempty"`
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
	// ClusterDraining: cordoned and moving its preemptible gangs away.
	ClusterDraining ClusterState = "Draining"
	// ClusterLost: silent for longer than the fence timeout; its gangs are rescheduled.
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
}

// GitOpsStatus is the configuration a cluster applied, as its agent last
// reported it, and the commit a rollout pinned on it.
type GitOpsStatus struct {
	// Revision applied in full (e.g. main@sha1:…).
	Revision string `json:"revision,omitempty"`
	// AppliedCommit is the bare SHA of Revision.
	AppliedCommit string `json:"appliedCommit,omitempty"`
	// AttemptedRevision and AttemptedCommit name the last attempt's revision.
	AttemptedRevision string `json:"attemptedRevision,omitempty"`
	AttemptedCommit   string `json:"attemptedCommit,omitempty"`
	// Health of the applied objects: Healthy, Progressing, Degraded or Unknown.
	Health string `json:"health,omitempty"`
	// HealthMessage explains a health other than Healthy.
	HealthMessage string `json:"healthMessage,omitempty"`
	// LastAppliedTime of the revision.
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// LastAttemptTime is when the last sync finished.
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// Message is the last attempt's error; empty when it succeeded.
	Message string `json:"message,omitempty"`
	// Drifted lists objects the last sync corrected (Kind/namespace/name).
	Drifted []string `json:"drifted,omitempty"`
	// InventorySize is the number of objects applied from Git.
	InventorySize int32 `json:"inventorySize,omitempty"`
	// Conditions are the agent's Ready, Reconciling and Stalled.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReportedTime is when the hub received the agent's last report.
	ReportedTime *metav1.Time `json:"reportedTime,omitempty"`
	// PinnedCommit, when set, is the commit the hub tells the agent to sync
	// instead of the source's ref (set by a rollout).
	PinnedCommit string `json:"pinnedCommit,omitempty"`
	// PinnedBy is the rollout that pinned PinnedCommit.
	PinnedBy string `json:"pinnedBy,omitempty"`
}
