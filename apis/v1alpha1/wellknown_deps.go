// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// MemberNamespace is the default namespace of member pods in the hub
// cluster and in every workload cluster. Until tenancy gives each tenant a
// namespace of its own it is also "the job's namespace on the hub": the
// ConfigMaps, Secrets and ServiceAccounts a job's template references must
// exist there at submit (docs/dependencies.md).
const MemberNamespace = "shoal-jobs"

// Names on the copies of a member's dependencies (ConfigMaps, Secrets,
// ServiceAccounts) that an agent keeps in its workload cluster
// (agent/deps, docs/dependencies.md).
const (
	// LabelCopy marks an object the agent copied from the hub cluster
	// ("true"); the agent updates and deletes only objects that carry it.
	LabelCopy = Prefix + "copy"
	// AnnotationCopyJobs lists, comma-separated and sorted, the jobs whose
	// local members reference a copy.
	AnnotationCopyJobs = Prefix + "copy-jobs"
	// AnnotationSourceUID is the UID of a copy's hub-cluster object.
	AnnotationSourceUID = Prefix + "source-uid"
	// AnnotationSourceVersion is the resourceVersion of the hub-cluster
	// object a copy was last written from.
	AnnotationSourceVersion = Prefix + "source-resource-version"
	// ManagedByLabel and ManagedByAgent: the app.kubernetes.io/managed-by
	// label every copy carries.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByAgent = "shoal-agent"
	// ManagedByHub is the managed-by label of the hub's copies, in each
	// cluster's namespace of the hub cluster, of the objects jobs reference
	// in the users' namespace (hub/dispatch copies.go).
	ManagedByHub = "shoal-hub"
)

// Reasons of the Prepared pod condition and of events on hub member pods
// about a member's dependencies.
const (
	// ReasonDependencyMissing: a ConfigMap, Secret or ServiceAccount the
	// member references does not exist in the hub cluster's member
	// namespace (deleted after submit). Before the local pod exists the
	// member is refused (Prepared False); afterwards an event is recorded
	// and the local copy is kept for the running member.
	ReasonDependencyMissing = "DependencyMissing"
	// ReasonDependencyConflict: an object of the same kind and name that
	// the agent did not create exists in the workload cluster; the agent
	// never overwrites it, and refuses the member (Prepared False).
	ReasonDependencyConflict = "DependencyConflict"
	// ReasonDependencyNotCarried: the referenced object is one the agent
	// never copies out of the hub cluster (a service-account token Secret);
	// the member is refused (Prepared False).
	ReasonDependencyNotCarried = "DependencyNotCarried"
)
