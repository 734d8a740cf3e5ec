// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/hubcluster"
)

// TestShippedHubRBACIssues runs the Issuer as a ServiceAccount that holds
// exactly the shoal-hub ClusterRole of deploy/hub: it creates a cluster's
// namespace, binds the agent there and copies dependencies into it, while
// it can neither bind nor write any other role with rights it lacks (no
// general bind or escalate).
func TestShippedHubRBACIssues(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	role := shippedHubRole(t)
	role.Name = "shoal-hub-under-test"
	mustCreateNS(ctx, t, hubAdmin, hubcluster.Namespace)
	// deploy/hub installs the agents' shared ClusterRoles: the hub holds
	// get and bind on them, no write and no escalate.
	for _, r := range shippedAgentRoles(t) {
		if err := ignoreExists(hubAdmin.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "hub-under-test", Namespace: hubcluster.Namespace}}
	for _, err := range []error{
		ignoreExists(hubAdmin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})),
		ignoreExists(hubAdmin.CoreV1().ServiceAccounts(hubcluster.Namespace).Create(ctx, sa, metav1.CreateOptions{})),
		ignoreExists(hubAdmin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}},
		}, metav1.CreateOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	tr, err := hubAdmin.CoreV1().ServiceAccounts(hubcluster.Namespace).CreateToken(ctx, sa.Name, tokenRequest(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(hubCP.Config)
	cfg.BearerToken = tr.Status.Token
	hub := kubernetes.NewForConfigOrDie(cfg)

	// RBAC caches may lag the binding a moment.
	var kc []byte
	eventually(t, 20*time.Second, "the shipped hub role issues credentials", func(ctx context.Context) (bool, error) {
		kc, err = hubcluster.New(cfg, hubcluster.WithTokenTTL(600)).Issue(ctx, "rbac1")
		return err == nil, err
	})
	ns := v1alpha1.ClusterNamespace("rbac1")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns}}
	if _, err := hub.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the hub copies a dependency into the cluster's namespace: %v", err)
	}
	if _, err := agentClient(t, kc).CoreV1().ConfigMaps(ns).Get(ctx, "copy", metav1.GetOptions{}); err != nil {
		t.Fatalf("the agent reads its namespace: %v", err)
	}
	other := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "not-shoals"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}}}
	if _, err := hub.RbacV1().ClusterRoles().Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the hub creates a ClusterRole with rights it lacks: got %v, want Forbidden", err)
	}
	if _, err := hubAdmin.RbacV1().ClusterRoles().Create(ctx, other, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "not-shoals", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: other.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: hubcluster.ServiceAccountName("rbac1"), Namespace: hubcluster.Namespace}}}
	if _, err := hub.RbacV1().RoleBindings(ns).Create(ctx, bind, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the hub binds a ClusterRole that is not the agents': got %v, want Forbidden", err)
	}
	if err := hubcluster.New(cfg).Revoke(ctx, "rbac1"); err != nil {
		t.Errorf("the shipped hub role revokes: %v", err)
	}
}

// shippedHubRole is the shoal-hub ClusterRole of deploy/hub.
func shippedHubRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	for _, r := range shippedClusterRoles(t) {
		if r.Name == "shoal-hub" {
			return r
		}
	}
	t.Fatal("no ClusterRole shoal-hub in deploy/hub")
	return nil
}

// shippedAgentRoles are the agents' shared ClusterRoles of deploy/hub.
func shippedAgentRoles(t *testing.T) []*rbacv1.ClusterRole {
	t.Helper()
	var out []*rbacv1.ClusterRole
	for _, r := range shippedClusterRoles(t) {
		switch r.Name {
		case hubcluster.ClusterRoleName, hubcluster.MemberRoleName, hubcluster.LeaseRoleName:
			out = append(out, r)
		}
	}
	if len(out) != 3 {
		t.Fatalf("deploy/hub holds %d of the agents' 3 shared ClusterRoles", len(out))
	}
	return out
}

// shippedClusterRoles are the ClusterRoles of deploy/hub.
func shippedClusterRoles(t *testing.T) []*rbacv1.ClusterRole {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(),
		filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "hub"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*rbacv1.ClusterRole
	for _, r := range res.Resources() {
		if r.GetKind() != "ClusterRole" {
			continue
		}
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(b, &role); err != nil {
			t.Fatal(err)
		}
		out = append(out, &role)
	}
	return out
}

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
