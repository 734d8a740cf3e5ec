package rollout_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	gt "github.com/shoal-dev/shoal/federation/gitopstypes"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

// rawCodec reads records as stored.
type rawCodec struct{}

func (rawCodec) Marshal(b []byte) ([]byte, error)   { return b, nil }
func (rawCodec) Unmarshal(b []byte) ([]byte, error) { return b, nil }

func TestSetSourceRefusesCredentials(t *testing.T) {
	e := newEnv(t)
	e.addCluster(t, "eu1")
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
			_, _, err := e.fleet.SetSource(e.ctx, "eu1", &gt.Source{URL: tt.url, SecretRef: "git-creds"})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, rollout.ErrInvalid)) {
				t.Fatalf("SetSource(%s) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
	// Nothing refused reached the store: the record holds no secret value,
	// only the Secret's name.
	b, _, err := store.NewCollection[[]byte](e.st, registry.KindClusters, rawCodec{}).Get(e.ctx, "eu1")
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

func TestReportReturnsPinnedSource(t *testing.T) {
	e := newEnv(t)
	e.addCluster(t, "eu1")
	if src, err := e.fleet.Report(e.ctx, "eu1", gt.Status{Health: gt.HealthUnknown}); err != nil || src != nil {
		t.Fatalf("Report without a source = %v, %v; want nil, nil", src, err)
	}
	want := gt.Source{URL: "https://git.example.com/fleet.git", Ref: gt.Ref{Branch: "main"}, Path: "clusters/eu1",
		Interval: time.Minute, SecretRef: "git-creds", Prune: true}
	if _, _, err := e.fleet.SetSource(e.ctx, "eu1", &want); err != nil {
		t.Fatal(err)
	}
	st := gt.Status{AppliedCommit: "aaaaaaa1", Health: gt.HealthHealthy, InventorySize: 3,
		Conditions: []gt.Condition{{Type: gt.ConditionReady, Status: true, Reason: gt.ReasonSucceeded}}}
	src, err := e.fleet.Report(e.ctx, "eu1", st)
	if err != nil || src == nil || *src != want.WithDefaults() {
		t.Fatalf("Report = %+v, %v; want %+v", src, err, want)
	}
	cl := e.get(t, "eu1")
	if got := rollout.StatusFromAPI(cl.Status.GitOps); got.AppliedCommit != "aaaaaaa1" || !got.Ready() || got.InventorySize != 3 {
		t.Fatalf("stored status = %+v", got)
	}
	if err := e.fleet.Pin(e.ctx, "eu1", "bbbbbbb2", "r1"); err != nil {
		t.Fatal(err)
	}
	src, err = e.fleet.Report(e.ctx, "eu1", st)
	if err != nil || src.Ref.Commit != "bbbbbbb2" || src.Ref.Branch != "main" {
		t.Fatalf("Report while pinned = %+v, %v; want commit bbbbbbb2 on main", src, err)
	}
	if _, _, err := e.fleet.SetSource(e.ctx, "eu1", &want); err != nil {
		t.Fatal(err)
	}
	if src, _ := e.fleet.Report(e.ctx, "eu1", st); src.Ref.Commit != "" {
		t.Fatalf("SetSource kept the pin: %+v", src)
	}
	// A source without ref, interval and health timeout comes back with the
	// defaults the agent fills in, so that the agent's comparison of its
	// current source with the hub's answer is stable (no re-sync loop).
	if _, _, err := e.fleet.SetSource(e.ctx, "eu1", &gt.Source{URL: want.URL}); err != nil {
		t.Fatal(err)
	}
	if src, _ := e.fleet.Report(e.ctx, "eu1", st); *src != src.WithDefaults() || src.Ref.Branch != "main" {
		t.Fatalf("Report answered a source without defaults: %+v", src)
	}
	if _, err := e.fleet.Report(e.ctx, "nope", st); !errors.Is(err, rollout.ErrNotFound) {
		t.Fatalf("Report of unknown cluster = %v, want ErrNotFound", err)
	}
}

func TestUnchangedReportWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.addCluster(t, "eu1")
	if _, _, err := e.fleet.SetSource(e.ctx, "eu1", &gt.Source{URL: "https://git.example.com/fleet.git"}); err != nil {
		t.Fatal(err)
	}
	st := gt.Status{AppliedCommit: "aaaaaaa1", Health: gt.HealthHealthy, LastAttemptTime: e.clk.Now().Add(-time.Second),
		Conditions: []gt.Condition{{Type: gt.ConditionReady, Status: true, LastTransitionTime: e.clk.Now()}}}
	rev := func() int64 {
		_, r, err := e.clusters.Get(e.ctx, "eu1")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := e.fleet.Report(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	first := rev()
	e.clk.Step(30 * time.Second)
	if src, err := e.fleet.Report(e.ctx, "eu1", st); err != nil || src == nil {
		t.Fatalf("Report = %v, %v", src, err)
	}
	if got := rev(); got != first {
		t.Fatalf("unchanged report within a minute wrote the record (revision %d -> %d)", first, got)
	}
	st.Health = gt.HealthDegraded
	if _, err := e.fleet.Report(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	if got := rev(); got == first {
		t.Fatal("a changed report was not written")
	}
	changed := rev()
	e.clk.Step(2 * time.Minute)
	if _, err := e.fleet.Report(e.ctx, "eu1", st); err != nil {
		t.Fatal(err)
	}
	if got := rev(); got == changed {
		t.Fatal("an unchanged report after the refresh time was not written")
	}
}
