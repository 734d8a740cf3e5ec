// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func rule(groups, resources []string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().WithAPIGroups(groups...).WithResources(resources...).WithVerbs(verbs...)
}

// clusterRole is what any agent may do on cluster-scoped objects: keep
// virtual nodes (the admission policy narrows each agent's writes to its
// own cluster's) and ask the hub API server whether a kubelet client may do
// a request. Nodes are read by name only (get): virtual-kubelet never lists
// or watches them. Everything about members is in memberRole, bound in the
// cluster's own namespace.
func clusterRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	core := []string{""}
	return rbacv1ac.ClusterRole(ClusterRoleName).WithLabels(managedBy()).
		WithRules(
			rule(core, []string{"nodes"}, "get", "create", "update", "patch", "delete"),
			rule(core, []string{"nodes/status"}, "get", "update", "patch"),
			// The kubelet endpoints ask whether a client may do a request,
			// as a kubelet's webhook authorizer does (docs/security.md).
			rule([]string{"authorization.k8s.io"}, []string{"subjectaccessreviews"}, "create"),
		)
}

// memberRole is what an agent may do in its cluster's namespace
// (v1alpha1.ClusterNamespace) and nowhere else: one RoleBinding per cluster
// grants it there. The hub writes into that namespace the cluster's member
// pods, its jobs' rendezvous Services and EndpointSlices, and its copies of
// the jobs' ConfigMaps, Secrets and ServiceAccounts.
func memberRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	core := []string{""}
	return rbacv1ac.ClusterRole(MemberRoleName).WithLabels(managedBy()).
		WithRules(
			rule(core, []string{"pods"}, "get", "list", "watch", "delete"),
			rule(core, []string{"pods/status"}, "get", "update", "patch"),
			rule(core, []string{"events"}, "create", "patch", "update"),
			rule([]string{"events.k8s.io"}, []string{"events"}, "create", "patch", "update"),
			// The jobs' rendezvous Service and EndpointSlices, which the
			// agent mirrors into its workload cluster (docs/rendezvous.md).
			rule(core, []string{"services"}, "get", "list", "watch"),
			rule([]string{"discovery.k8s.io"}, []string{"endpointslices"}, "get", "list", "watch"),
			// The hub's copies of what the members reference, which the
			// agent copies on (docs/dependencies.md).
			rule(core, []string{"configmaps", "secrets", "serviceaccounts"}, "get", "list", "watch"),
		)
}

// leaseRole lets an agent keep node leases; bound in kube-node-lease only,
// the lease names narrowed by the policy.
func leaseRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	return rbacv1ac.ClusterRole(LeaseRoleName).WithLabels(managedBy()).
		WithRules(rule([]string{"coordination.k8s.io"}, []string{"leases"}, "get", "list", "watch", "create", "update", "patch", "delete"))
}

func managedBy() map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "shoal-hub"}
}

func labels(cluster string) map[string]string {
	return map[string]string{v1alpha1.LabelCluster: cluster, "app.kubernetes.io/managed-by": "shoal-hub"}
}

func subject(cluster string) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind("ServiceAccount").WithName(ServiceAccountName(cluster)).WithNamespace(Namespace)
}

func clusterRoleBinding(cluster string) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(objectName(cluster)).WithLabels(labels(cluster)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(ClusterRoleName)).
		WithSubjects(subject(cluster))
}

// tokenRole lets the agent refresh its own token and nothing else.
func tokenRole(cluster string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(objectName(cluster), Namespace).WithLabels(labels(cluster)).
		WithRules(rule([]string{""}, []string{"serviceaccounts/token"}, "create").WithResourceNames(ServiceAccountName(cluster)))
}

// roleBinding binds the cluster's agent, in namespace, to the Role (kind
// "Role") or ClusterRole (kind "ClusterRole") role.
func roleBinding(cluster, namespace, kind, role string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(objectName(cluster), namespace).WithLabels(labels(cluster)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind(kind).WithName(role)).
		WithSubjects(subject(cluster))
}

func serviceAccount(cluster string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ServiceAccountName(cluster), Namespace).WithLabels(labels(cluster))
}

func namespace(name string) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(name)
}

// clusterNamespace is the cluster's namespace, labelled with the cluster.
func clusterNamespace(cluster string) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(v1alpha1.ClusterNamespace(cluster)).WithLabels(labels(cluster))
}
