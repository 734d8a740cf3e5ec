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

// clusterRole is what any agent may do; the admission policy narrows each
// agent's writes to its own cluster's objects.
func clusterRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	core := []string{""}
	return rbacv1ac.ClusterRole(ClusterRoleName).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "shoal-hub"}).
		WithRules(
			rule(core, []string{"nodes"}, "get", "list", "watch", "create", "update", "patch", "delete"),
			rule(core, []string{"nodes/status"}, "get", "update", "patch"),
			rule(core, []string{"pods"}, "get", "list", "watch", "delete"),
			rule(core, []string{"pods/status"}, "get", "update", "patch"),
			rule(core, []string{"events"}, "create", "patch", "update"),
			rule([]string{"events.k8s.io"}, []string{"events"}, "create", "patch", "update"),
			rule(core, []string{"namespaces"}, "get"),
			// The jobs' rendezvous Service and EndpointSlices, which the
			// agent mirrors into its workload cluster (docs/rendezvous.md).
			rule(core, []string{"services"}, "get", "list", "watch"),
			rule([]string{"discovery.k8s.io"}, []string{"endpointslices"}, "get", "list", "watch"),
			// The kubelet endpoints ask whether a client may do a request,
			// as a kubelet's webhook authorizer does (docs/security.md).
			rule([]string{"authorization.k8s.io"}, []string{"subjectaccessreviews"}, "create"),
		)
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

// leaseRole lets the agent keep node leases (names narrowed by the policy).
func leaseRole(cluster string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(objectName(cluster), LeaseNamespace).WithLabels(labels(cluster)).
		WithRules(rule([]string{"coordination.k8s.io"}, []string{"leases"}, "get", "list", "watch", "create", "update", "patch", "delete"))
}

// tokenRole lets the agent refresh its own token and nothing else.
func tokenRole(cluster string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(objectName(cluster), Namespace).WithLabels(labels(cluster)).
		WithRules(rule([]string{""}, []string{"serviceaccounts/token"}, "create").WithResourceNames(ServiceAccountName(cluster)))
}

func roleBinding(cluster, namespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(objectName(cluster), namespace).WithLabels(labels(cluster)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(objectName(cluster))).
		WithSubjects(subject(cluster))
}

func serviceAccount(cluster string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ServiceAccountName(cluster), Namespace).WithLabels(labels(cluster))
}

func namespace(name string) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(name)
}
