// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestBrokenRevisionAppliesNothing pushes revisions that cannot be applied
// (an invalid kustomization; a manifest the API server rejects next to a good
// change): each fails with a clear reason, applies nothing of that revision
// and keeps the previous state; a fixed revision then applies.
func TestBrokenRevisionAppliesNothing(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	ns := a.ns + "-apps"
	repo := newRepo(t, map[string]string{
		"kustomization.yaml": kustomization("ns.yaml", "a.yaml"),
		"ns.yaml":            nsYAML(ns),
		"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "1"}),
	})
	good := a.syncOK(t, source(repo, "")).AppliedCommit

	tests := []struct {
		name    string
		files   map[string]string
		reason  string
		message string
	}{
		{"invalid kustomization", map[string]string{
			"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "missing.yaml"),
			"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "2"}),
		}, v1alpha1.GitOpsReasonBuildFailed, "missing.yaml"},
		{"rejected manifest", map[string]string{
			"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "bad.yaml", "newns.yaml"),
			"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "2"}),
			"newns.yaml":         nsYAML(ns+"-new") + cmYAML(ns+"-new", "in-new-ns", map[string]string{"v": "1"}),
			"bad.yaml":           cmYAML(ns, "Not_A_Valid_Name", map[string]string{"v": "1"}),
		}, v1alpha1.GitOpsReasonValidationFailed, "Not_A_Valid_Name"},
		{"unknown kind", map[string]string{
			"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "bad.yaml"),
			"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "2"}),
			"bad.yaml":           "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: " + ns + "\n",
		}, v1alpha1.GitOpsReasonValidationFailed, "unknown kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := repo.push(t, tt.files)
			st, err := a.sync(t, source(repo, ""))
			if err == nil {
				t.Fatal("sync of a broken revision succeeded")
			}
			wantReason(t, st, tt.reason, true)
			if !strings.Contains(st.Message, tt.message) {
				t.Fatalf("error %q does not name %q", st.Message, tt.message)
			}
			if st.AppliedCommit != good || !v1alpha1.SameCommit(st.AttemptedCommit, head) || st.Health != v1alpha1.GitOpsHealthHealthy {
				t.Fatalf("applied %s attempted %s health %s; want applied %s attempted %s, still healthy", st.AppliedCommit, st.AttemptedCommit, st.Health, good, head)
			}
			if got := configMap(t, ns, "a"); got == nil || got.Data["v"] != "1" {
				t.Fatalf("part of the broken revision was applied: a = %+v", got)
			}
			if configMap(t, ns+"-new", "in-new-ns") != nil {
				t.Fatal("objects of the broken revision were created")
			}
		})
	}
	fixed := repo.push(t, map[string]string{
		"kustomization.yaml": kustomization("ns.yaml", "a.yaml"),
		"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "3"}),
	})
	st := a.syncOK(t, source(repo, ""))
	if !v1alpha1.SameCommit(st.AppliedCommit, fixed) || configMap(t, ns, "a").Data["v"] != "3" {
		t.Fatalf("fixed revision not applied: %+v", st)
	}
	if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.GitOpsConditionStalled) {
		t.Fatal("still Stalled after a good sync")
	}
}

// TestFetchErrors: an unreachable repository, a missing branch, a missing
// path and missing credentials each fail with FetchFailed/BuildFailed and
// leave the cluster as it was.
func TestFetchErrors(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", a.ns+"-cm", map[string]string{"v": "1"})})
	a.syncOK(t, source(repo, ""))
	unreachable := source(repo, "")
	unreachable.URL = "http://127.0.0.1:1/nothing.git"
	missingRef := source(repo, "")
	missingRef.Ref = v1alpha1.GitOpsRef{Branch: "no-such-branch"}
	missingCommit := source(repo, "")
	missingCommit.Ref = v1alpha1.GitOpsRef{Commit: "0123456789abcdef0123456789abcdef01234567"}
	missingPath := source(repo, "clusters/nowhere")
	noCreds := source(repo, "")
	noCreds.SecretRef = "no-such-secret"
	tests := []struct {
		name    string
		src     v1alpha1.GitOpsSource
		reason  string
		stalled bool
		message string
	}{
		{"unreachable", unreachable, v1alpha1.GitOpsReasonFetchFailed, false, "127.0.0.1:1"},
		{"missing branch", missingRef, v1alpha1.GitOpsReasonFetchFailed, false, "no-such-branch"},
		{"missing commit", missingCommit, v1alpha1.GitOpsReasonFetchFailed, false, "0123456789abcdef"},
		{"missing path", missingPath, v1alpha1.GitOpsReasonBuildFailed, true, "clusters/nowhere"},
		{"missing secret", noCreds, v1alpha1.GitOpsReasonCredentialsFailed, false, "no-such-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := a.sync(t, tt.src)
			if err == nil {
				t.Fatal("sync succeeded")
			}
			wantReason(t, st, tt.reason, tt.stalled)
			if !strings.Contains(st.Message, tt.message) {
				t.Fatalf("error %q does not mention %q", st.Message, tt.message)
			}
			if configMap(t, "default", a.ns+"-cm") == nil || st.InventorySize != 1 {
				t.Fatal("cluster changed by a failed fetch")
			}
		})
	}
}

// TestCredentialsFromSecret: the Git server requires basic auth; without the
// Secret the fetch is refused, with it (read from the workload cluster) it
// works. The Source carries only the Secret's name.
func TestCredentialsFromSecret(t *testing.T) {
	integration(t)
	a := newAgent(t, false)
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", a.ns+"-cm", map[string]string{"v": "1"})})
	anonymous := source(repo, "")
	anonymous.SecretRef = ""
	st, err := a.sync(t, anonymous)
	if err == nil {
		t.Fatal("anonymous fetch from an authenticated server succeeded")
	}
	wantReason(t, st, v1alpha1.GitOpsReasonFetchFailed, false)
	b := newAgent(t, true)
	repo2 := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", b.ns+"-cm", map[string]string{"v": "1"})})
	b.syncOK(t, source(repo2, ""))
	if src, _ := b.syncer.Source(); strings.Contains(src.URL, gitPassword) || src.SecretRef != credsSecret {
		t.Fatalf("source carries credentials: %+v", src)
	}
}
