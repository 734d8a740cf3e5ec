// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/api/meta"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var nsSeq atomic.Int64

// agentEnv is one simulated agent: its namespace, credentials Secret and Syncer.
type agentEnv struct {
	ns     string
	syncer *gitops.Syncer
}

const credsSecret = "git-credentials"

// newAgent creates an agent namespace holding the Git credentials Secret and
// a Syncer for it.
func newAgent(t testing.TB, withCreds bool) *agentEnv {
	t.Helper()
	ns := fmt.Sprintf("shoal-agent-%d", nsSeq.Add(1))
	createNS(t, ns)
	if withCreds {
		create(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: credsSecret},
			Data:       map[string][]byte{"username": []byte(gitUser), "password": []byte(gitPassword)},
		})
	}
	s, err := gitops.New(cfg, gitops.Options{
		Namespace: ns, WorkDir: t.TempDir(), Name: "gitops",
		InsecureCredentialsOverHTTP: true, PollInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &agentEnv{ns: ns, syncer: s}
}

// source is a Source for repo at path with the agent's credentials.
func source(r *gitRepo, path string) v1alpha1.GitOpsSource {
	return v1alpha1.GitOpsSource{URL: r.url, Ref: v1alpha1.GitOpsRef{Branch: "main"}, Path: path, SecretRef: credsSecret, Prune: true, HealthTimeout: &metav1.Duration{Duration: 30 * time.Second}}
}

// syncOK sets src and syncs, failing the test on error.
func (a *agentEnv) syncOK(t testing.TB, src v1alpha1.GitOpsSource) v1alpha1.GitOpsStatus {
	t.Helper()
	st, err := a.sync(t, src)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !st.Ready() || st.Health != v1alpha1.GitOpsHealthHealthy || st.Message != "" {
		t.Fatalf("after a good sync: ready=%v health=%s error=%q", st.Ready(), st.Health, st.Message)
	}
	return st
}

func (a *agentEnv) sync(t testing.TB, src v1alpha1.GitOpsSource) (v1alpha1.GitOpsStatus, error) {
	t.Helper()
	if err := a.syncer.SetSource(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return a.syncer.Sync(ctx)
}

func createNS(t testing.TB, name string) {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func create(t testing.TB, o client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), o); err != nil {
		t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

// configMap returns the data of a ConfigMap, or nil when it does not exist.
func configMap(t testing.TB, ns, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &cm
}

// cmYAML renders a ConfigMap manifest.
func cmYAML(ns, name string, data map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n", name, ns)
	for k, v := range data {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	return b.String()
}

func nsYAML(name string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

// kustomization lists resources.
func kustomization(resources ...string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.Join(resources, "\n  - ") + "\n"
}

func wantReason(t testing.TB, st v1alpha1.GitOpsStatus, reason string, stalled bool) {
	t.Helper()
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.GitOpsConditionReady)
	stall := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.GitOpsConditionStalled)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason || stall != stalled || st.Message == "" {
		t.Fatalf("status: Ready=%v Stalled=%v, want Ready=false/%s Stalled=%v; error %q", ready, stall, reason, stalled, st.Message)
	}
}
