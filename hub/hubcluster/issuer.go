// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// FieldManager owns the fields the Issuer applies.
const FieldManager = "shoal-hub"

// ErrInvalidCluster is returned for a cluster name that cannot name objects.
var ErrInvalidCluster = errors.New("invalid cluster name")

// Issuer creates and revokes scoped hub-cluster credentials for agents.
type Issuer struct {
	cfg      *rest.Config
	server   string
	ttl      int64
	memberNS string
	client   kubernetes.Interface
	clientOK error
}

// Option configures an Issuer.
type Option func(*Issuer)

// WithServer sets the hub API server URL written into kubeconfigs, for when
// agents reach it by another address than the hub does.
func WithServer(url string) Option { return func(i *Issuer) { i.server = url } }

// WithTokenTTL bounds the lifetime of issued tokens in seconds.
func WithTokenTTL(seconds int64) Option { return func(i *Issuer) { i.ttl = seconds } }

// New returns an Issuer acting on the hub management cluster that cfg reaches
// (as an administrator able to create RBAC and admission policies).
func New(cfg *rest.Config, opts ...Option) *Issuer {
	i := &Issuer{cfg: cfg, server: cfg.Host, ttl: DefaultTokenTTL, memberNS: defaultMemberNamespace}
	for _, o := range opts {
		o(i)
	}
	i.client, i.clientOK = kubernetes.NewForConfig(cfg)
	return i
}

// Issue makes sure cluster's ServiceAccount, RBAC and admission policy exist
// and returns a kubeconfig with a fresh token for it.
func (i *Issuer) Issue(ctx context.Context, cluster string) ([]byte, error) {
	if err := validCluster(cluster); err != nil {
		return nil, err
	}
	if i.clientOK != nil {
		return nil, fmt.Errorf("hub cluster client: %w", i.clientOK)
	}
	if err := i.ensure(ctx, cluster); err != nil {
		return nil, err
	}
	tr, err := i.client.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccountName(cluster),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &i.ttl}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for %s: %w", ServiceAccountName(cluster), err)
	}
	ca, err := caData(i.cfg)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Issued hub-cluster credentials", "cluster", cluster, "expires", tr.Status.ExpirationTimestamp.Time)
	return kubeconfig(i.server, ca, i.cfg.Insecure, ServiceAccountName(cluster), tr.Status.Token)
}

func (i *Issuer) ensure(ctx context.Context, cluster string) error {
	apply := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	c := i.client
	steps := []struct {
		what string
		do   func() error
	}{
		{"namespace", func() error { _, err := c.CoreV1().Namespaces().Apply(ctx, namespace(Namespace), apply); return err }},
		{"serviceaccount", func() error {
			_, err := c.CoreV1().ServiceAccounts(Namespace).Apply(ctx, serviceAccount(cluster), apply)
			return err
		}},
		{"clusterrole", func() error { _, err := c.RbacV1().ClusterRoles().Apply(ctx, clusterRole(), apply); return err }},
		{"clusterrolebinding", func() error {
			_, err := c.RbacV1().ClusterRoleBindings().Apply(ctx, clusterRoleBinding(cluster), apply)
			return err
		}},
		{"lease role", func() error {
			_, err := c.RbacV1().Roles(LeaseNamespace).Apply(ctx, leaseRole(cluster), apply)
			return err
		}},
		{"lease rolebinding", func() error {
			_, err := c.RbacV1().RoleBindings(LeaseNamespace).Apply(ctx, roleBinding(cluster, LeaseNamespace), apply)
			return err
		}},
		{"token role", func() error { _, err := c.RbacV1().Roles(Namespace).Apply(ctx, tokenRole(cluster), apply); return err }},
		{"token rolebinding", func() error {
			_, err := c.RbacV1().RoleBindings(Namespace).Apply(ctx, roleBinding(cluster, Namespace), apply)
			return err
		}},
		{"member namespace", func() error { _, err := c.CoreV1().Namespaces().Apply(ctx, namespace(i.memberNS), apply); return err }},
		{"dependency role", func() error {
			_, err := c.RbacV1().Roles(i.memberNS).Apply(ctx, depsRole(cluster, i.memberNS), apply)
			return err
		}},
		{"dependency rolebinding", func() error {
			_, err := c.RbacV1().RoleBindings(i.memberNS).Apply(ctx, roleBinding(cluster, i.memberNS), apply)
			return err
		}},
		{"admission policy", func() error {
			_, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, policy(cluster), apply)
			return err
		}},
		{"admission policy binding", func() error {
			_, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, policyBinding(cluster), apply)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("apply %s for cluster %s: %w", s.what, cluster, err)
		}
	}
	return nil
}

// Revoke deletes the cluster's ServiceAccount (which invalidates every token
// issued for it), its RBAC, its policy and its virtual nodes. Objects already
// gone are not an error.
func (i *Issuer) Revoke(ctx context.Context, cluster string) error {
	if err := validCluster(cluster); err != nil {
		return err
	}
	if i.clientOK != nil {
		return fmt.Errorf("hub cluster client: %w", i.clientOK)
	}
	c, name, del := i.client, objectName(cluster), metav1.DeleteOptions{}
	errs := []error{
		c.CoreV1().ServiceAccounts(Namespace).Delete(ctx, ServiceAccountName(cluster), del),
		c.RbacV1().ClusterRoleBindings().Delete(ctx, name, del),
		c.RbacV1().RoleBindings(LeaseNamespace).Delete(ctx, name, del),
		c.RbacV1().Roles(LeaseNamespace).Delete(ctx, name, del),
		c.RbacV1().RoleBindings(Namespace).Delete(ctx, name, del),
		c.RbacV1().Roles(Namespace).Delete(ctx, name, del),
		c.RbacV1().RoleBindings(i.memberNS).Delete(ctx, name, del),
		c.RbacV1().Roles(i.memberNS).Delete(ctx, name, del),
		c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, del),
		c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, del),
		c.CoreV1().Nodes().DeleteCollection(ctx, del, metav1.ListOptions{LabelSelector: v1alpha1.LabelCluster + "=" + cluster}),
	}
	var out []error
	for _, err := range errs {
		if err != nil && !apierrors.IsNotFound(err) {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}
