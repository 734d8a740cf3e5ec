// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// WithMemberNamespace sets the hub cluster namespace of the member pods
// (the dispatcher's; default v1alpha1.MemberNamespace), where each agent may
// read the ConfigMaps, Secrets and ServiceAccounts it copies to its
// workload cluster (agent/deps).
func WithMemberNamespace(ns string) Option {
	return func(i *Issuer) {
		if ns != "" {
			i.memberNS = ns
		}
	}
}

// depsRole lets the agent read, in the member namespace only, the objects
// member pods reference. It is every ConfigMap, Secret and ServiceAccount
// of that namespace, not only those of the agent's members: RBAC cannot
// narrow list and watch by name, and a ValidatingAdmissionPolicy does not
// see reads. So any agent can read every Secret the jobs of the fleet use
// (docs/dependencies.md).
func depsRole(cluster, ns string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(objectName(cluster), ns).WithLabels(labels(cluster)).
		WithRules(rule([]string{""}, []string{"configmaps", "secrets", "serviceaccounts"}, "get", "list", "watch"))
}

// defaultMemberNamespace is the Issuer's member namespace by default.
const defaultMemberNamespace = v1alpha1.MemberNamespace
