package rollout_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	gt "github.com/shoal-dev/shoal/federation/gitopstypes"
	"github.com/shoal-dev/shoal/hub/rollout"
)

func TestValidateSource(t *testing.T) {
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
		err := rollout.ValidateSource(gt.Source{URL: tt.url})
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, rollout.ErrInvalid)) {
			t.Errorf("ValidateSource(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestSourceRoundTrip(t *testing.T) {
	tests := []gt.Source{
		{URL: "https://x/y"},
		{URL: "https://x/y", Ref: gt.Ref{Branch: "main", Commit: "abc1234"}, Path: "clusters/eu1", Interval: time.Minute,
			SecretRef: "git", Prune: true, HealthTimeout: 30 * time.Second},
		{URL: "ssh://git@x/y", Ref: gt.Ref{Tag: "v1"}},
	}
	for _, src := range tests {
		if got := rollout.SourceFromAPI(rollout.SourceToAPI(src)); !reflect.DeepEqual(got, src) {
			t.Errorf("round trip of %+v = %+v", src, got)
		}
	}
}

func TestStatusRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := gt.Status{AppliedRevision: "main@sha1:abc", AppliedCommit: "abc", AttemptedRevision: "main@sha1:def", AttemptedCommit: "def",
		LastAttemptTime: at, LastAppliedTime: at.Add(-time.Hour), LastError: "build failed", Health: gt.HealthHealthy,
		HealthMessage: "", InventorySize: 7, Conditions: []gt.Condition{
			{Type: gt.ConditionReady, Status: false, Reason: gt.ReasonBuildFailed, Message: "m", LastTransitionTime: at},
			{Type: gt.ConditionStalled, Status: true, Reason: gt.ReasonBuildFailed, LastTransitionTime: at}}}
	api := rollout.StatusToAPI(st, nil, at)
	if got := rollout.StatusFromAPI(api); !reflect.DeepEqual(got, st) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, st)
	}
	if got := rollout.StatusFromAPI(nil); got.Health != gt.HealthUnknown {
		t.Errorf("StatusFromAPI(nil).Health = %s, want Unknown", got.Health)
	}
}
