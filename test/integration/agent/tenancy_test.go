// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	agentcluster "github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
)

// applyAgentRBAC creates the objects of deploy/agent/rbac.yaml and
// policy.yaml in the workload cluster behind cfg, as `kubectl apply -k
// deploy/agent` would (the namespace is shoal-system in both).
func applyAgentRBAC(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "agent")
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kubernetes.NewForConfigOrDie(cfg).Discovery()))
	for _, f := range []string{"rbac.yaml", "policy.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s %s: %v", f, gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if u.GetNamespace() != "" && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
			}
			if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s %s %s: %v", f, u.GetKind(), u.GetName(), err)
			}
		}
	}
}

// agentSAClient is a client of the workload cluster behind admin (cfg) as
// the agent's ServiceAccount of deploy/agent/rbac.yaml (a TokenRequest
// token, not admin).
func agentSAClient(ctx context.Context, t *testing.T, admin kubernetes.Interface, adminCfg *rest.Config) (kubernetes.Interface, *rest.Config) {
	t.Helper()
	ttl := int64(3600)
	tr, err := admin.CoreV1().ServiceAccounts("shoal-system").CreateToken(ctx, "shoal-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = tr.Status.Token
	return kubernetes.NewForConfigOrDie(cfg), cfg
}

// TestAgentTenancyRBAC proves on a real workload kube-apiserver, with the
// agent's ServiceAccount token from deploy/agent/rbac.yaml: the agent
// creates a member of queue org/team in that queue's namespace (created
// with the enforce label of its level and the agent's member RoleBinding);
// the workload cluster's own Pod Security admission refuses a privileged pod
// there; the agent refuses a privileged member itself; and the agent is
// Forbidden to create pods, Secrets or RoleBindings in kube-system or
// default, to read Secrets cluster-wide, and to relabel kube-system.
func TestAgentTenancyRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cp, err := framework.StartControlPlane() // its own: TestAgent stops workCP
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	work := kubernetes.NewForConfigOrDie(cp.Config)
	mustCreateNS(ctx, t, work, "shoal-system")
	applyAgentRBAC(ctx, t, cp.Config)
	agent, agentCfg := agentSAClient(ctx, t, work, cp.Config)

	self, err := podsync.SelfSubject(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if self.Kind != rbacv1.ServiceAccountKind || self.Namespace != "shoal-system" || self.Name != "shoal-agent" {
		t.Fatalf("SelfSubject = %+v", self)
	}
	c, err := agentcluster.New(agent)
	if err != nil {
		t.Fatal(err)
	}
	s := podsync.New(c, agentCfg, nil, nil)
	s.SetMemberSubject(self)
	notes := make(chan *corev1.Pod, 16)
	s.Notify("shoal-w-h100", func(p *corev1.Pod) { notes <- p })
	go func() { _ = c.Run(ctx) }()
	go func() { _ = s.Run(ctx) }()
	select {
	case <-s.Synced():
	case <-ctx.Done():
		t.Fatal("the agent's pod cache did not sync: it cannot list pods cluster-wide")
	}

	const queue = "org/team"
	ns := v1alpha1.LocalMemberNamespace(queue)
	member := func(name string, priv bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shoal-jobs", UID: types.UID("uid-" + name),
			Annotations: map[string]string{v1alpha1.AnnotationQueue: queue, v1alpha1.AnnotationPodSecurity: "baseline"}},
			Spec: corev1.PodSpec{NodeName: "shoal-w-h100", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		if priv {
			yes := true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}
		return p
	}
	// The agent's RoleBinding takes effect with the RBAC cache; retry as
	// virtual-kubelet does.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := s.CreatePod(ctx, "shoal-w-h100", member("m0", false))
		if err != nil {
			t.Logf("create member: %v", err)
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the agent could not create a member in its queue namespace")
	}
	if lp, err := work.CoreV1().Pods(ns).Get(ctx, "m0", metav1.GetOptions{}); err != nil || lp.Labels[v1alpha1.LabelManaged] != "true" {
		t.Fatalf("member in %s: %v", ns, err)
	}
	got, err := work.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels[v1alpha1.PodSecurityEnforceLabel] != "baseline" || got.Labels[v1alpha1.LabelManaged] != "true" {
		t.Fatalf("queue namespace %s: %v %v", ns, err, got.Labels)
	}

	// The workload cluster enforces the level on its own.
	yes := true
	direct := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "direct", Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}}}
	if _, err := agent.CoreV1().Pods(ns).Create(ctx, direct, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("a privileged pod in a baseline queue namespace: %v, want Forbidden by PodSecurity", err)
	}
	// The agent refuses a privileged member before the API server sees it.
	if err := s.CreatePod(ctx, "shoal-w-h100", member("priv", true)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-waitFor(notes, "priv"):
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != v1alpha1.ReasonPodSecurity {
			t.Errorf("privileged member reported %s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	case <-ctx.Done():
		t.Fatal("the privileged member's refusal was not reported")
	}

	// Nothing outside the queue namespaces. The admission policy takes
	// effect a moment after it is created: wait for it on a dry run.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := agent.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "queue namespaces"), nil
	})
	if err != nil {
		t.Fatal("deploy/agent/policy.yaml never refused a namespace outside the queue namespaces")
	}
	for _, other := range []string{metav1.NamespaceSystem, metav1.NamespaceDefault} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := agent.CoreV1().Pods(other).Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("create pod in %s: %v, want Forbidden", other, err)
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other}}
		if _, err := agent.CoreV1().Secrets(other).Create(ctx, sec, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("create secret in %s: %v, want Forbidden", other, err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.AgentMemberClusterRole},
			Subjects: []rbacv1.Subject{*self}}
		if _, err := agent.RbacV1().RoleBindings(other).Create(ctx, rb, metav1.CreateOptions{}); err == nil ||
			!apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("bind itself member rights in %s: %v, want refused", other, err)
		}
	}
	if _, err := agent.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets cluster-wide: %v, want Forbidden", err)
	}
	admin := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{*self}}
	if _, err := agent.RbacV1().RoleBindings(ns).Create(ctx, admin, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bind cluster-admin in its own queue namespace: %v, want Forbidden (no escalate)", err)
	}
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
	if _, err := agent.CoreV1().Namespaces().Patch(ctx, metav1.NamespaceSystem, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
		t.Error("the agent relabelled kube-system")
	}
	if _, err := agent.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}},
		metav1.CreateOptions{}); err == nil {
		t.Error("the agent created a namespace that is not a queue namespace")
	}
}

// waitFor returns a channel that yields the first note about pod name.
func waitFor(notes <-chan *corev1.Pod, name string) <-chan *corev1.Pod {
	out := make(chan *corev1.Pod, 1)
	go func() {
		for p := range notes {
			if p.Name == name {
				out <- p
				return
			}
		}
	}()
	return out
}
