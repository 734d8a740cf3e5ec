// SPDX-License-Identifier: Apache-2.0

package hubcluster

// Names of the objects an Issuer keeps in the hub management cluster.
const (
	// Namespace holds the agents' ServiceAccounts.
	Namespace = "shoal-system"
	// ClusterRoleName is the ClusterRole shared by every agent, bound
	// cluster-wide: virtual nodes and SubjectAccessReviews.
	ClusterRoleName = "shoal:agent"
	// MemberRoleName is the ClusterRole every agent is bound to in its
	// cluster's namespace only (v1alpha1.ClusterNamespace).
	MemberRoleName = "shoal:agent-members"
	// LeaseRoleName is the ClusterRole every agent is bound to in
	// LeaseNamespace only.
	LeaseRoleName = "shoal:agent-leases"
	// LeaseNamespace holds node leases.
	LeaseNamespace = "kube-node-lease"
	// DefaultTokenTTL bounds the lifetime of an issued token.
	DefaultTokenTTL = 24 * 3600
)

// ServiceAccountName returns the agent ServiceAccount of a cluster.
func ServiceAccountName(cluster string) string { return "shoal-agent-" + cluster }

// Username returns the Kubernetes user name of a cluster's agent.
func Username(cluster string) string {
	return "system:serviceaccount:" + Namespace + ":" + ServiceAccountName(cluster)
}

// objectName names the per-cluster RBAC and policy objects.
func objectName(cluster string) string { return "shoal-agent-" + cluster }
