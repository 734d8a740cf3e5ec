// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
)

// sharedRoles are the ClusterRoles every agent is bound to.
func sharedRoles() []*rbacv1ac.ClusterRoleApplyConfiguration {
	return []*rbacv1ac.ClusterRoleApplyConfiguration{clusterRole(), memberRole(), leaseRole()}
}

// ensureClusterRoles applies each shared ClusterRole that is missing or
// whose rules differ, and leaves one with exactly its rules alone. A hub
// installed by the chart (deploy/charts/shoal-hub) finds them installed and
// holds only get and bind on them: applying a ClusterRole with rights the
// hub lacks needs escalate, and escalate on a role it may update would let
// the hub grant itself anything. A hub with those rights (an administrator
// kubeconfig) creates them as before.
func (i *Issuer) ensureClusterRoles(ctx context.Context, apply metav1.ApplyOptions) error {
	for _, r := range sharedRoles() {
		cur, err := i.client.RbacV1().ClusterRoles().Get(ctx, *r.Name, metav1.GetOptions{})
		if err == nil && equality.Semantic.DeepEqual(cur.Rules, rulesOf(r)) {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := i.client.RbacV1().ClusterRoles().Apply(ctx, r, apply); err != nil {
			return err
		}
	}
	return nil
}

// rulesOf is r's rules as the API server returns them.
func rulesOf(r *rbacv1ac.ClusterRoleApplyConfiguration) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(r.Rules))
	for _, p := range r.Rules {
		out = append(out, rbacv1.PolicyRule{Verbs: p.Verbs, APIGroups: p.APIGroups, Resources: p.Resources,
			ResourceNames: p.ResourceNames, NonResourceURLs: p.NonResourceURLs})
	}
	return out
}
