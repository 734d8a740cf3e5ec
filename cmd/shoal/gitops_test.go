// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func TestGitOpsFlagsSource(t *testing.T) {
	tests := []struct {
		name    string
		flags   gitopsFlags
		wantErr string
	}{
		{"branch", gitopsFlags{url: "https://git.example.com/fleet.git", branch: "main", path: "clusters/eu1", secret: "git", prune: true}, ""},
		{"commit", gitopsFlags{url: "ssh://git@git.example.com/fleet.git", commit: "4f1cabc"}, ""},
		{"no url", gitopsFlags{}, "url"},
		{"tag and branch", gitopsFlags{url: "https://x/y", tag: "v1", branch: "main"}, "ref"},
		{"path escapes", gitopsFlags{url: "https://x/y", path: "../x"}, "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := tt.flags.source()
			if tt.wantErr == "" {
				if err != nil || src.URL != tt.flags.url || src.SecretRef != tt.flags.secret || src.Prune != tt.flags.prune {
					t.Fatalf("source() = %+v, %v", src, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("source() error = %v, want one about %s", err, tt.wantErr)
			}
		})
	}
}

func TestPrintGitOpsStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := metav1.NewTime(now.Add(-2 * time.Minute))
	cl := &v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{GitOps: &v1alpha1.GitOpsSource{URL: "https://x/y", Path: "clusters/eu1", Ref: v1alpha1.GitOpsRef{Branch: "main"}}},
		Status: v1alpha1.ClusterStatus{GitOps: &v1alpha1.GitOpsStatus{AppliedCommit: "0123456789abcdef0123", Health: "Healthy",
			LastAttemptTime: &at, PinnedCommit: "fedcba9876543210", PinnedBy: "r1"}}}
	cl.Name = "eu1"
	bare := &v1alpha1.Cluster{}
	bare.Name = "us1"
	var b bytes.Buffer
	if err := printGitOpsStatus(&b, []*v1alpha1.Cluster{cl, bare}, false, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"clusters/eu1 branch main", "0123456789ab", "Healthy", "fedcba987654 (r1)", "2m", "us1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPrintRolloutTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "r1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: v1alpha1.RolloutSpec{Revision: strings.Repeat("ab", 20), Soak: metav1.Duration{Duration: 5 * time.Minute}},
		Status: v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Wave: 0, Message: "wave 1: cluster a: revision rejected; rolled back",
			Waves: []v1alpha1.RolloutWave{{Clusters: []string{"a"}}, {Clusters: []string{"b", "c"}}}}}
	var b bytes.Buffer
	if err := printRolloutTable(&b, []*v1alpha1.Rollout{r}, true, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"r1", "abababababab", "Halted", "1/2", "5m0s", "wave 1 (failed, rolled back): a", "wave 2 (pending): b, c"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
