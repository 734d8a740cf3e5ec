// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestFirstSyncChangeAndPrune covers a first sync, a change applied, an
// object removed from Git being pruned, and an object Shoal never applied in
// the same namespace being left alone.
func TestFirstSyncChangeAndPrune(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	ns := a.ns + "-apps"
	repo := newRepo(t, map[string]string{
		"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "b.yaml"),
		"ns.yaml":            nsYAML(ns),
		"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "1"}),
		"b.yaml":             cmYAML(ns, "b", map[string]string{"v": "1"}),
	})
	st := a.syncOK(t, source(repo, ""))
	if !v1alpha1.SameCommit(st.AppliedCommit, repo.head(t)) || st.InventorySize != 3 {
		t.Fatalf("first sync: applied %s (head %s), inventory %d", st.AppliedCommit, repo.head(t), st.InventorySize)
	}
	cm := configMap(t, ns, "a")
	if cm == nil || cm.Data["v"] != "1" || cm.Labels[gitops.OwnerGroup+"/name"] != "gitops" {
		t.Fatalf("configmap a after first sync: %+v", cm)
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-from-git"}, Data: map[string]string{"x": "y"}})

	head := repo.push(t, map[string]string{
		"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "c.yaml"),
		"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "2"}),
		"b.yaml":             "",
		"c.yaml":             cmYAML(ns, "c", map[string]string{"v": "1"}),
	})
	st = a.syncOK(t, source(repo, ""))
	if !v1alpha1.SameCommit(st.AppliedCommit, head) {
		t.Fatalf("applied %s, want %s", st.AppliedCommit, head)
	}
	if got := configMap(t, ns, "a"); got == nil || got.Data["v"] != "2" {
		t.Fatalf("change not applied: %+v", got)
	}
	if configMap(t, ns, "b") != nil {
		t.Fatal("b removed from Git but not pruned")
	}
	if configMap(t, ns, "c") == nil {
		t.Fatal("c added to Git but not applied")
	}
	if configMap(t, ns, "not-from-git") == nil {
		t.Fatal("an object Shoal never applied was deleted")
	}
}

// TestDriftCorrected edits and deletes applied objects behind Shoal's back;
// the next sync at the same revision reverts them and lists them as drifted.
func TestDriftCorrected(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	ns := a.ns + "-apps"
	repo := newRepo(t, map[string]string{
		"kustomization.yaml": kustomization("ns.yaml", "a.yaml", "b.yaml", "c.yaml"),
		"ns.yaml":            nsYAML(ns),
		"a.yaml":             cmYAML(ns, "a", map[string]string{"v": "git"}),
		"b.yaml":             cmYAML(ns, "b", map[string]string{"v": "git"}),
		"c.yaml":             cmYAML(ns, "c", map[string]string{"v": "git"}),
	})
	a.syncOK(t, source(repo, ""))
	ctx := context.Background()
	edited := configMap(t, ns, "a")
	edited.Data["v"] = "hand-edited"
	if err := k8s.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, configMap(t, ns, "b")); err != nil {
		t.Fatal(err)
	}
	st := a.syncOK(t, source(repo, ""))
	if got := configMap(t, ns, "a"); got.Data["v"] != "git" {
		t.Fatalf("drift not corrected: a.v = %q", got.Data["v"])
	}
	if configMap(t, ns, "b") == nil {
		t.Fatal("deleted object not recreated")
	}
	want := map[string]bool{"ConfigMap/" + ns + "/a": true, "ConfigMap/" + ns + "/b": true}
	if len(st.Drifted) != len(want) {
		t.Fatalf("drifted = %v, want %v", st.Drifted, want)
	}
	for _, d := range st.Drifted {
		if !want[d] {
			t.Fatalf("drifted = %v, want %v", st.Drifted, want)
		}
	}
	if st = a.syncOK(t, source(repo, "")); len(st.Drifted) != 0 {
		t.Fatalf("drift reported again after correction: %v", st.Drifted)
	}
}
