// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
)

// gitopsEnv is a registry with cluster eu1 registered.
type gitopsEnv struct {
	r   *registry.Registry
	clk *clocktesting.FakeClock
	ctx context.Context
}

func newGitOpsEnv(t *testing.T) *gitopsEnv {
	t.Helper()
	r, clk, ctx := newRegistry(t)
	tok, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour, Usages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := register(t, r, ctx, tok, "eu1", "uid-eu1"); err != nil {
		t.Fatal(err)
	}
	return &gitopsEnv{r: r, clk: clk, ctx: ctx}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestSetGitOpsSourceRefusesCredentials(t *testing.T) {
	e := newGitOpsEnv(t)
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://git.example.com/fleet.git", true},
		{"ssh://git@git.example.com/fleet.git", true},
		{"https://alice:s3cr3t@git.example.com/fleet.git", false},
		{"https://ghp_token123@git.example.com/fleet.git", false},
		{"http://x-access-token:s3cr3t@git.example.com/fleet.git", false},
		{"ssh://git:s3cr3t@git.example.com/fleet.git", false},
		{"file:///etc", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, _, err := e.r.SetGitOpsSource(e.ctx, "eu1", &v1alpha1.GitOpsSource{URL: tt.url, SecretRef: "git-creds"})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, registry.ErrInvalid)) {
				t.Fatalf("SetGitOpsSource(%s) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
	// Nothing refused reached the store: the record holds no secret value,
	// only the Secret's name.
	cl, _, err := e.r.GetCluster(e.ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cl) // the stored record is this JSON
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cr3t")) || bytes.Contains(b, []byte("ghp_token123")) {
		t.Fatalf("credential material stored on the hub: %s", b)
	}
	if !bytes.Contains(b, []byte(`"secretRef":"git-creds"`)) {
		t.Fatalf("secret name not stored: %s", b)
	}
}

func TestValidateGitOpsSource(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://git.example.com/fleet.git", true},
		{"ssh://git@git.example.com/fleet.git", true},
		{"https://alice:s3cr3t@git.example.com/fleet.git", false},
		{"https://ghp_token@git.example.com/fleet.git", false},
		{"ssh://git:pw@git.example.com/fleet.git", false},
		{"ftp://git.example.com/fleet.git", false},
		{"", false},
	}
	for _, tt := range tests {
		err := registry.ValidateGitOpsSource(v1alpha1.GitOpsSource{URL: tt.url})
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, registry.ErrInvalid)) {
			t.Errorf("ValidateGitOpsSource(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestReportGitOpsStatusReturnsPinnedSource(t *testing.T) {
	e := newGitOpsEnv(t)
	if src, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", v1alpha1.GitOpsStatus{Health: v1alpha1.GitOpsHealthUnknown}); err != nil || src != nil {
		t.Fatalf("Report without a source = %v, %v; want nil, nil", src, err)
	}
	want := v1alpha1.GitOpsSource{URL: "https://git.example.com/fleet.git", Ref: v1alpha1.GitOpsRef{Branch: "main"}, Path: "clusters/eu1",
		Interval: duration(time.Minute), SecretRef: "git-creds", Prune: true}
	if _, _, err := e.r.SetGitOpsSource(e.ctx, "eu1", &want); err != nil {
		t.Fatal(err)
	}
	st := v1alpha1.GitOpsStatus{AppliedCommit: "aaaaaaa1", Health: v1alpha1.GitOpsHealthHealthy, InventorySize: 3,
		Conditions:   []metav1.Condition{{Type: v1alpha1.GitOpsConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.GitOpsReasonSucceeded}},
		PinnedCommit: "ccccccc3", PinnedBy: "the-agent"} // the hub's fields: ignored in a report
	src, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", st)
	if err != nil || src == nil || !reflect.DeepEqual(*src, want.WithDefaults()) {
		t.Fatalf("Report = %+v, %v; want %+v", src, err, want)
	}
	cl, _, err := e.r.GetCluster(e.ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.Status.GitOps; got.AppliedCommit != "aaaaaaa1" || !got.Ready() || got.InventorySize != 3 || got.PinnedCommit != "" || got.ReportedTime == nil {
		t.Fatalf("stored status = %+v", got)
	}
	if err := e.r.PinGitOps(e.ctx, "eu1", "bbbbbbb2", "r1"); err != nil {
		t.Fatal(err)
	}
	src, err = e.r.ReportGitOpsStatus(e.ctx, "eu1", st)
	if err != nil || src.Ref.Commit != "bbbbbbb2" || src.Ref.Branch != "main" {
		t.Fatalf("Report while pinned = %+v, %v; want commit bbbbbbb2 on main", src, err)
	}
	if _, _, err := e.r.SetGitOpsSource(e.ctx, "eu1", &want); err != nil {
		t.Fatal(err)
	}
	if src, _ := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); src.Ref.Commit != "" {
		t.Fatalf("SetGitOpsSource kept the pin: %+v", src)
	}
	// A source without ref, interval and health timeout comes back with the
	// defaults the agent fills in, so that the agent's comparison of its
	// current source with the hub's answer is stable (no re-sync loop).
	if _, _, err := e.r.SetGitOpsSource(e.ctx, "eu1", &v1alpha1.GitOpsSource{URL: want.URL}); err != nil {
		t.Fatal(err)
	}
	if src, _ := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); !reflect.DeepEqual(*src, src.WithDefaults()) || src.Ref.Branch != "main" {
		t.Fatalf("Report answered a source without defaults: %+v", src)
	}
	if _, err := e.r.ReportGitOpsStatus(e.ctx, "nope", st); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Report of unknown cluster = %v, want ErrNotFound", err)
	}
}

func TestUnchangedGitOpsReportWritesNothing(t *testing.T) {
	e := newGitOpsEnv(t)
	if _, _, err := e.r.SetGitOpsSource(e.ctx, "eu1", &v1alpha1.GitOpsSource{URL: "https://git.example.com/fleet.git"}); err != nil {
		t.Fatal(err)
	}
	attempt := metav1.NewTime(e.clk.Now().Add(-time.Second))
	st := v1alpha1.GitOpsStatus{AppliedCommit: "aaaaaaa1", Health: v1alpha1.GitOpsHealthHealthy, LastAttemptTime: &attempt,
		Conditions: []metav1.Condition{{Type: v1alpha1.GitOpsConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(e.clk.Now())}}}
	rev := func() int64 {
		_, r, err := e.r.GetCluster(e.ctx, "eu1")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	first := rev()
	e.clk.Step(30 * time.Second)
	if src, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); err != nil || src == nil {
		t.Fatalf("Report = %v, %v", src, err)
	}
	if got := rev(); got != first {
		t.Fatalf("unchanged report within a minute wrote the record (revision %d -> %d)", first, got)
	}
	st.Health = v1alpha1.GitOpsHealthDegraded
	if _, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	if got := rev(); got == first {
		t.Fatal("a changed report was not written")
	}
	changed := rev()
	e.clk.Step(2 * time.Minute)
	if _, err := e.r.ReportGitOpsStatus(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	if got := rev(); got == changed {
		t.Fatal("an unchanged report after the refresh time was not written")
	}
}
