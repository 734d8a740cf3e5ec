package gitopstypes

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		src   Source
		field string // empty: valid
	}{
		{"https branch", Source{URL: "https://git.example.com/fleet.git", Ref: Ref{Branch: "main"}, Path: "clusters/eu1"}, ""},
		{"ssh commit", Source{URL: "ssh://git@git.example.com/fleet.git", Ref: Ref{Commit: "4f1cabc"}}, ""},
		{"missing url", Source{}, "url"},
		{"file scheme", Source{URL: "file:///tmp/x"}, "url"},
		{"tag and branch", Source{URL: "https://x/y", Ref: Ref{Tag: "v1", Branch: "main"}}, "ref"},
		{"non-hex commit", Source{URL: "https://x/y", Ref: Ref{Commit: "main"}}, "ref.commit"},
		{"path escapes", Source{URL: "https://x/y", Path: "../etc"}, "path"},
		{"negative interval", Source{URL: "https://x/y", Interval: -1}, "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Validate()
			var ie *InvalidSourceError
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &ie) || ie.Field != tt.field || !errors.Is(err, ErrInvalidSource) {
				t.Fatalf("Validate() = %v, want invalid field %q", err, tt.field)
			}
		})
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

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	var s Status
	s.SetCondition(Condition{Type: ConditionReady, Status: true, Reason: ReasonSucceeded})
	first := s.Conditions[0].LastTransitionTime
	s.Conditions[0].LastTransitionTime = first.Add(1)
	s.SetCondition(Condition{Type: ConditionReady, Status: true, Reason: ReasonSucceeded, Message: "again"})
	if !s.Ready() || s.Conditions[0].LastTransitionTime != first.Add(1) || len(s.Conditions) != 1 {
		t.Fatalf("conditions = %+v", s.Conditions)
	}
}
