// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// WithMemberNamespace sets the users' namespace of the hub cluster, where
// jobs' dependencies are created (default v1alpha1.MemberNamespace). Agents
// are granted nothing there; the Issuer only removes the Role and
// RoleBinding that earlier hubs granted each agent in it (every ConfigMap,
// Secret and ServiceAccount of the namespace).
func WithMemberNamespace(ns string) Option {
	return func(i *Issuer) {
		if ns != "" {
			i.memberNS = ns
		}
	}
}

// defaultMemberNamespace is the Issuer's member namespace by default.
const defaultMemberNamespace = v1alpha1.MemberNamespace

// dropLegacy deletes what earlier hubs granted the cluster's agent and that
// the cluster namespace replaces: the Role and RoleBinding of the users'
// namespace, and the per-cluster lease Role (now the shared LeaseRoleName).
// Objects already gone are not an error.
func (i *Issuer) dropLegacy(ctx context.Context, cluster string) error {
	c, name, del := i.client, objectName(cluster), metav1.DeleteOptions{}
	var out []error
	for _, err := range []error{
		c.RbacV1().RoleBindings(i.memberNS).Delete(ctx, name, del),
		c.RbacV1().Roles(i.memberNS).Delete(ctx, name, del),
		c.RbacV1().Roles(LeaseNamespace).Delete(ctx, name, del),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}
