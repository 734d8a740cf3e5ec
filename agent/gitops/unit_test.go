// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestInventoryPruneSet(t *testing.T) {
	old := inventoryOf([]*unstructured.Unstructured{
		obj("v1", "Namespace", "", "apps"),
		obj("v1", "ConfigMap", "apps", "a"),
		obj("apps/v1", "Deployment", "apps", "web"),
	}, "main@sha1:1", "apps")
	next := inventoryOf([]*unstructured.Unstructured{
		obj("v1", "Namespace", "", "apps"),
		obj("v1", "ConfigMap", "apps", "b"),
	}, "main@sha1:2", "apps")
	stale, err := old.missingFrom(next)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range stale {
		got = append(got, u.GetAPIVersion()+" "+u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	sort.Strings(got)
	want := []string{"apps/v1 Deployment apps/web", "v1 ConfigMap apps/a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stale = %v, want %v", got, want)
	}
	u := next.union(old)
	if u.Revision != "main@sha1:2" || len(u.Entries) != 4 {
		t.Fatalf("union = %+v", u)
	}
	if sameEntries(old, next) || !sameEntries(old, inventoryOf(nil, "", "").union(old)) {
		t.Fatal("sameEntries wrong")
	}
}

func TestBuildLayouts(t *testing.T) {
	fixtures := filepath.Join("..", "..", "test", "testdata", "gitops")
	tests := []struct {
		name, root, path string
		want             int
		reason           string
	}{
		{"fleet overlay", "fleet", "clusters/eu1", 3, ""},
		{"fleet base", "fleet", "base", 3, ""},
		{"plain YAML without kustomization", "single", "", 3, ""},
		{"missing path", "fleet", "clusters/nowhere", 0, v1alpha1.GitOpsReasonBuildFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyDir(t, filepath.Join(fixtures, tt.root))
			objs, err := build(root, tt.path)
			if tt.reason != "" {
				var se *SyncError
				if !errors.As(err, &se) || se.Reason != tt.reason {
					t.Fatalf("build error = %v, want reason %s", err, tt.reason)
				}
				return
			}
			if err != nil || len(objs) != tt.want {
				t.Fatalf("build = %d objects, %v; want %d", len(objs), err, tt.want)
			}
			if tt.root == "single" && hasKustomization(root) {
				t.Fatal("generated kustomization.yaml left in the checkout")
			}
		})
	}
}

func TestBuildInvalidKustomization(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "kustomization.yaml"), []byte("resources:\n  - missing.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := build(root, "")
	var se *SyncError
	if !errors.As(err, &se) || se.Reason != v1alpha1.GitOpsReasonBuildFailed {
		t.Fatalf("build = %v, want BuildFailed", err)
	}
}

func TestStrategyAndStalls(t *testing.T) {
	if s := strategy(v1alpha1.GitOpsRef{}); s.Branch != "main" {
		t.Fatalf("empty ref = %+v", s)
	}
	if s := strategy(v1alpha1.GitOpsRef{Branch: "dev", Commit: "abc1234"}); s.Commit != "abc1234" || s.Branch != "dev" {
		t.Fatalf("commit ref = %+v", s)
	}
	if s := strategy(v1alpha1.GitOpsRef{Tag: "v1"}); s.Tag != "v1" || s.Branch != "" {
		t.Fatalf("tag ref = %+v", s)
	}
	for reason, want := range map[string]bool{
		v1alpha1.GitOpsReasonBuildFailed: true, v1alpha1.GitOpsReasonValidationFailed: true, v1alpha1.GitOpsReasonInvalidSource: true,
		v1alpha1.GitOpsReasonFetchFailed: false, v1alpha1.GitOpsReasonCredentialsFailed: false, v1alpha1.GitOpsReasonHealthCheckFailed: false,
	} {
		if stalls(reason) != want {
			t.Errorf("stalls(%s) = %v", reason, !want)
		}
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
