// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func TestDescribeClusterGitOps(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	src := &v1alpha1.GitOpsSource{URL: "http://127.0.0.1:1/fleet.git", Ref: v1alpha1.GitOpsRef{Branch: "main"}, Path: "clusters/eu1", Prune: true}
	tests := []struct {
		name      string
		src       *v1alpha1.GitOpsSource
		status    *v1alpha1.GitOpsStatus
		want, not []string
	}{
		{name: "no source", want: []string{"GitOps source:    -"}, not: []string{"GitOps status", "GitOps applied"}},
		{name: "not reported", src: src, want: []string{"http://127.0.0.1:1/fleet.git", "path clusters/eu1 prune", "not reported yet"}},
		{name: "synced", src: src, status: &v1alpha1.GitOpsStatus{Revision: "main@sha1:" + sha, AppliedCommit: sha, Health: "Healthy", InventorySize: 3},
			want: []string{"main@sha1:" + sha, "Healthy, 3 objects, 0 drifted"}, not: []string{"GitOps pin", "GitOps error"}},
		{name: "pinned and failing", src: src, status: &v1alpha1.GitOpsStatus{Health: "Degraded", PinnedCommit: sha, PinnedBy: "r1",
			Message: "build failed", AttemptedRevision: "sha1:" + sha, LastAppliedTime: &metav1.Time{}},
			want: []string{"GitOps pin:", sha + " (rollout r1)", "GitOps error:", "build failed (attempted sha1:" + sha + ")", "Degraded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "eu1"}, Spec: v1alpha1.ClusterSpec{GitOps: tt.src},
				Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady, GitOps: tt.status}}
			var b bytes.Buffer
			if err := describeCluster(&b, c, nil, false); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q:\n%s", n, out)
				}
			}
		})
	}
}
