// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
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
	// A registration makes about a dozen requests (the ServiceAccount,
	// RBAC, admission policy, a token): at client-go's default of 5 a
	// second, 100 agents registering at once (a fleet's first start, a
	// hub restored) waited in the client's throttle, 221 s for 100 in
	// docs/scale.md.
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = 50, 100
	i.client, i.clientOK = kubernetes.NewForConfig(rc)
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
	// A quiet context: client-go logs response bodies, here the token,
	// through the context's logger at -v≥8.
	tr, err := i.client.CoreV1().ServiceAccounts(Namespace).CreateToken(klog.NewContext(ctx, klog.Logger{}), ServiceAccountName(cluster),
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
		{"clusterroles", func() error { return i.ensureClusterRoles(ctx, apply) }},
		{"clusterrolebinding", func() error {
			_, err := c.RbacV1().ClusterRoleBindings().Apply(ctx, clusterRoleBinding(cluster), apply)
			return err
		}},
		{"cluster namespace", func() error {
			_, err := c.CoreV1().Namespaces().Apply(ctx, clusterNamespace(cluster), apply)
			return err
		}},
		{"member rolebinding", func() error {
			return i.applyBinding(ctx, roleBinding(cluster, v1alpha1.ClusterNamespace(cluster), "ClusterRole", MemberRoleName))
		}},
		{"lease rolebinding", func() error {
			return i.applyBinding(ctx, roleBinding(cluster, LeaseNamespace, "ClusterRole", LeaseRoleName))
		}},
		{"token role", func() error { _, err := c.RbacV1().Roles(Namespace).Apply(ctx, tokenRole(cluster), apply); return err }},
		{"token rolebinding", func() error {
			return i.applyBinding(ctx, roleBinding(cluster, Namespace, "Role", objectName(cluster)))
		}},
		{"earlier grants", func() error { return i.dropLegacy(ctx, cluster) }},
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

// applyBinding applies a RoleBinding; one whose roleRef differs (immutable:
// an earlier hub bound a per-cluster Role) is deleted and applied again.
func (i *Issuer) applyBinding(ctx context.Context, b *rbacv1ac.RoleBindingApplyConfiguration) error {
	apply := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	api := i.client.RbacV1().RoleBindings(*b.Namespace)
	_, err := api.Apply(ctx, b, apply)
	if !apierrors.IsInvalid(err) {
		return err
	}
	if err := api.Delete(ctx, *b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = api.Apply(ctx, b, apply)
	return err
}

// Revoke deletes the cluster's ServiceAccount (which invalidates every token
// issued for it), its RBAC, its policy and its virtual nodes. Objects already
// gone are not an error. The cluster's namespace is kept: only the hub reads
// it once the RoleBinding is gone, and the dispatcher still removes the
// members it holds (a namespace being deleted would refuse a registration
// under the same name until it is gone).
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
		c.RbacV1().RoleBindings(v1alpha1.ClusterNamespace(cluster)).Delete(ctx, name, del),
		c.RbacV1().RoleBindings(LeaseNamespace).Delete(ctx, name, del),
		c.RbacV1().RoleBindings(Namespace).Delete(ctx, name, del),
		c.RbacV1().Roles(Namespace).Delete(ctx, name, del),
		i.dropLegacy(ctx, cluster),
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
