// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateGitOpsSource(t *testing.T) {
	tests := []struct {
		name  string
		src   GitOpsSource
		field string // empty: valid
	}{
		{"https branch", GitOpsSource{URL: "https://git.example.com/fleet.git", Ref: GitOpsRef{Branch: "main"}, Path: "clusters/eu1"}, ""},
		{"ssh commit", GitOpsSource{URL: "ssh://git@git.example.com/fleet.git", Ref: GitOpsRef{Commit: "4f1cabc"}}, ""},
		{"missing url", GitOpsSource{}, "url"},
		{"file scheme", GitOpsSource{URL: "file:///tmp/x"}, "url"},
		{"tag and branch", GitOpsSource{URL: "https://x/y", Ref: GitOpsRef{Tag: "v1", Branch: "main"}}, "ref"},
		{"non-hex commit", GitOpsSource{URL: "https://x/y", Ref: GitOpsRef{Commit: "main"}}, "ref.commit"},
		{"path escapes", GitOpsSource{URL: "https://x/y", Path: "../etc"}, "path"},
		{"negative interval", GitOpsSource{URL: "https://x/y", Interval: &metav1.Duration{Duration: -1}}, "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Validate()
			var ie *InvalidGitOpsSourceError
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &ie) || ie.Field != tt.field || !errors.Is(err, ErrInvalidGitOpsSource) {
				t.Fatalf("Validate() = %v, want invalid field %q", err, tt.field)
			}
		})
	}
}

func TestGitOpsSourceWithDefaults(t *testing.T) {
	src := GitOpsSource{URL: "https://x/y"}
	got := src.WithDefaults()
	if got.Ref.Branch != "main" || got.Interval.Duration != DefaultGitOpsInterval || got.HealthTimeout.Duration != DefaultGitOpsHealthTimeout {
		t.Fatalf("WithDefaults() = %+v", got)
	}
	if src.Interval != nil || src.HealthTimeout != nil {
		t.Fatal("WithDefaults changed its receiver")
	}
	set := GitOpsSource{URL: "https://x/y", Ref: GitOpsRef{Tag: "v1"}, Interval: &metav1.Duration{Duration: time.Minute}}
	if got := set.WithDefaults(); got.Ref.Branch != "" || got.Interval.Duration != time.Minute {
		t.Fatalf("WithDefaults() replaced set fields: %+v", got)
	}
}

func TestSameCommit(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"4f1cabcdef", "4f1cabc", true},
		{"4f1cabc", "4f1cabcdef", true},
		{"4f1cabd", "4f1cabcdef", false},
		{"4f1c", "4f1cabcdef", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := SameCommit(tt.a, tt.b); got != tt.want {
			t.Errorf("SameCommit(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestGitOpsConditionKeepsTransitionTime: the agent sets its conditions with
// meta.SetStatusCondition, which keeps the transition time while the status
// does not change.
func TestGitOpsConditionKeepsTransitionTime(t *testing.T) {
	var s GitOpsStatus
	first := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: GitOpsConditionReady, Status: metav1.ConditionTrue,
		Reason: GitOpsReasonSucceeded, LastTransitionTime: first})
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: GitOpsConditionReady, Status: metav1.ConditionTrue,
		Reason: GitOpsReasonSucceeded, Message: "again", LastTransitionTime: metav1.NewTime(first.Add(time.Hour))})
	if !s.Ready() || !s.Conditions[0].LastTransitionTime.Equal(&first) || len(s.Conditions) != 1 || s.Conditions[0].Message != "again" {
		t.Fatalf("conditions = %+v", s.Conditions)
	}
	if (*GitOpsStatus)(nil).Ready() {
		t.Fatal("nil status is Ready")
	}
}
