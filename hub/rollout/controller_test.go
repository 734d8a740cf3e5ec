// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

const (
	oldCommit = "1111111111111111111111111111111111111111"
	newCommit = "2222222222222222222222222222222222222222"
)

// fleetOf sets up clusters with a source on branch main, all applied at
// oldCommit and healthy.
func fleetOf(t *testing.T, e *env, names ...string) {
	t.Helper()
	for _, n := range names {
		e.addCluster(t, n)
		if _, _, err := e.reg.SetGitOpsSource(e.ctx, n, &v1alpha1.GitOpsSource{URL: "https://git.example.com/fleet.git", Path: "clusters/" + n}); err != nil {
			t.Fatal(err)
		}
		e.report(t, n, applied(oldCommit))
	}
}

func applied(commit string) v1alpha1.GitOpsStatus {
	return v1alpha1.GitOpsStatus{AppliedCommit: commit, AttemptedCommit: commit, Health: v1alpha1.GitOpsHealthHealthy,
		Conditions: []metav1.Condition{{Type: v1alpha1.GitOpsConditionReady, Status: metav1.ConditionTrue}}}
}

func rejected(appliedCommit, attempted string) v1alpha1.GitOpsStatus {
	return v1alpha1.GitOpsStatus{AppliedCommit: appliedCommit, AttemptedCommit: attempted, Health: v1alpha1.GitOpsHealthHealthy,
		Message: "build: accumulating resources: missing base", Conditions: []metav1.Condition{
			{Type: v1alpha1.GitOpsConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.GitOpsReasonBuildFailed},
			{Type: v1alpha1.GitOpsConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.GitOpsReasonBuildFailed}}}
}

// report stores an agent report and returns the commit the hub pins ("" none).
func (e *env) report(t *testing.T, name string, st v1alpha1.GitOpsStatus) string {
	t.Helper()
	src, err := e.reg.ReportGitOpsStatus(e.ctx, name, st)
	if err != nil {
		t.Fatal(err)
	}
	return src.Ref.Commit
}

func (e *env) tick(t *testing.T) *v1alpha1.Rollout {
	t.Helper()
	if err := e.ctrl.TickAll(e.ctx); err != nil {
		t.Fatal(err)
	}
	list, err := e.ctrl.List(e.ctx)
	if err != nil || len(list) == 0 {
		t.Fatalf("List = %v, %v", list, err)
	}
	return list[0]
}

func TestRolloutBrokenCanaryHaltsAndRollsBack(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b", "c", "d")
	r, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1,100%", Soak: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Status.Waves; len(got) != 2 || strings.Join(got[0].Clusters, ",") != "a" {
		t.Fatalf("waves = %v, want [a] [b c d]", got)
	}
	if pin := e.report(t, "a", applied(oldCommit)); pin != newCommit {
		t.Fatalf("canary pinned %q, want %s", pin, newCommit)
	}
	for _, n := range []string{"b", "c", "d"} {
		// Following branch main, they are frozen at what they run.
		if pin := e.report(t, n, applied(oldCommit)); pin != oldCommit {
			t.Fatalf("cluster %s of the second wave pinned %q before the canary passed, want frozen at %s", n, pin, oldCommit)
		}
	}
	if r = e.tick(t); r.Status.Phase != fr.PhaseProgressing {
		t.Fatalf("phase = %s, want Progressing while the canary syncs", r.Status.Phase)
	}
	e.report(t, "a", rejected(oldCommit, newCommit))
	e.clk.Step(time.Second)
	r = e.tick(t)
	if r.Status.Phase != fr.PhaseHalted || !strings.Contains(r.Status.Message, "cluster a") {
		t.Fatalf("state = %+v, want Halted at cluster a", r.Status)
	}
	if pin := e.report(t, "a", rejected(oldCommit, newCommit)); pin != oldCommit {
		t.Fatalf("canary pinned %q after the halt, want rollback to %s", pin, oldCommit)
	}
	for _, n := range []string{"b", "c", "d"} {
		if g := e.get(t, n).Status.GitOps; g.PinnedCommit != oldCommit {
			t.Fatalf("cluster %s of the second wave touched: pinned %s", n, g.PinnedCommit)
		}
	}
	if _, err := e.ctrl.Abort(e.ctx, "r1"); !errors.Is(err, rollout.ErrConflict) {
		t.Fatalf("Abort of a halted rollout = %v, want ErrConflict", err)
	}
}

func TestRolloutWavesPassAfterSoak(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b", "c")
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1,100%", Soak: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e.report(t, "a", applied(newCommit))
	e.tick(t)
	e.clk.Step(30 * time.Second)
	if r := e.tick(t); r.Status.Wave != 0 {
		t.Fatalf("wave %d before the soak ended, want 0", r.Status.Wave)
	}
	e.clk.Step(31 * time.Second)
	if r := e.tick(t); r.Status.Wave != 1 {
		t.Fatalf("wave %d after the soak, want 1", r.Status.Wave)
	}
	for _, n := range []string{"b", "c"} {
		if pin := e.report(t, n, applied(newCommit)); pin != newCommit {
			t.Fatalf("cluster %s pinned %q, want %s", n, pin, newCommit)
		}
	}
	e.tick(t)
	e.clk.Step(2 * time.Minute)
	if r := e.tick(t); r.Status.Phase != fr.PhaseSucceeded {
		t.Fatalf("state = %+v, want Succeeded", r.Status)
	}
}

func TestRolloutNotReadyDuringSoakHalts(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b")
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1", Soak: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e.report(t, "a", applied(newCommit))
	e.tick(t)
	e.setState(t, "a", "NotReady")
	e.clk.Step(10 * time.Second)
	if r := e.tick(t); r.Status.Phase != fr.PhaseHalted {
		t.Fatalf("state = %+v, want Halted", r.Status)
	}
	if g := e.get(t, "a").Status.GitOps; g.PinnedCommit != oldCommit {
		t.Fatalf("pinned %q after the halt, want %s", g.PinnedCommit, oldCommit)
	}
}

func TestRolloutPauseResumeAbort(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b")
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1,100%", Soak: time.Minute, WaveTimeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r2", Revision: newCommit}); !errors.Is(err, rollout.ErrConflict) {
		t.Fatalf("second rollout over the same clusters = %v, want ErrConflict", err)
	}
	if _, err := e.ctrl.Pause(e.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(5 * time.Minute) // past the wave timeout: a paused rollout does not tick
	if r := e.tick(t); r.Status.Phase != fr.PhaseProgressing || !r.Spec.Paused {
		t.Fatalf("paused rollout ticked: %+v", r)
	}
	if _, err := e.ctrl.Resume(e.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(t); r.Status.Phase != fr.PhaseProgressing {
		t.Fatalf("resumed rollout = %+v, want Progressing (wave clock restarted)", r.Status)
	}
	r, err := e.ctrl.Abort(e.ctx, "r1")
	if err != nil || r.Status.Phase != fr.PhaseHalted {
		t.Fatalf("Abort = %+v, %v", r, err)
	}
	if g := e.get(t, "a").Status.GitOps; g.PinnedCommit != oldCommit {
		t.Fatalf("canary pinned %q after abort, want %s", g.PinnedCommit, oldCommit)
	}
}

func TestCreateInvalid(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a")
	e.addCluster(t, "nosource")
	tests := []rollout.CreateRequest{
		{Revision: "main"},
		{Revision: newCommit[:12]},
		{Revision: newCommit, Waves: "x"},
		{Revision: newCommit, Selector: "env in ("},
		{Revision: newCommit, Selector: "env=none"},
		{Revision: newCommit, Soak: -time.Second},
	}
	for _, req := range tests {
		if _, err := e.ctrl.Create(e.ctx, req); !errors.Is(err, rollout.ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid", req, err)
		}
	}
	if _, err := e.ctrl.Get(e.ctx, "nope"); !errors.Is(err, rollout.ErrNotFound) {
		t.Errorf("Get(nope) = %v, want ErrNotFound", err)
	}
}

// TestRepairLostPins: pins the hub decided but lost (a crash between storing
// the state and pinning, an admin clearing the current wave's pin) are
// written again at the next tick; a cluster another rollout or the admin
// took over after a halt is left alone.
func TestRepairLostPins(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b")
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1,100%", Soak: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.PinGitOps(e.ctx, "a", "", ""); err != nil { // the canary's pin lost
		t.Fatal(err)
	}
	e.tick(t)
	if g := e.get(t, "a").Status.GitOps; g.PinnedCommit != newCommit || g.PinnedBy != "r1" {
		t.Fatalf("canary pin not repaired: %q by %q", g.PinnedCommit, g.PinnedBy)
	}
	if _, err := e.ctrl.Abort(e.ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.PinGitOps(e.ctx, "a", newCommit, "r1"); err != nil { // the rollback lost
		t.Fatal(err)
	}
	e.tick(t)
	if g := e.get(t, "a").Status.GitOps; g.PinnedCommit != oldCommit {
		t.Fatalf("rollback not repaired: pinned %q", g.PinnedCommit)
	}
	if _, _, err := e.reg.SetGitOpsSource(e.ctx, "a", &v1alpha1.GitOpsSource{URL: "https://git.example.com/fleet.git"}); err != nil {
		t.Fatal(err)
	}
	e.tick(t)
	if g := e.get(t, "a").Status.GitOps; g.PinnedCommit != "" {
		t.Fatalf("halted rollout re-pinned a cluster the admin set since: %q", g.PinnedCommit)
	}
}

// rawCodec writes records as given.
type rawCodec struct{}

func (rawCodec) Marshal(b []byte) ([]byte, error)   { return b, nil }
func (rawCodec) Unmarshal(b []byte) ([]byte, error) { return b, nil }

// TestLegacyRolloutRecord: a rollout stored by a hub from before
// v1alpha1.Rollout is served and ticked on: its canary passes and the next
// wave is pinned.
func TestLegacyRolloutRecord(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b")
	start := e.clk.Now().UTC().Format(time.RFC3339)
	old := `{"name":"old","revision":"` + newCommit + `","waves":"1,100%","spec":{"commit":"` + newCommit +
		`","waves":[["a"],["b"]],"soak":60000000000},"state":{"phase":"Progressing","wave":0,"waveStarted":"` + start +
		`","previous":{"a":"` + oldCommit + `","b":"` + oldCommit + `"},"message":"wave 1/2"},"created":"` + start + `","updated":"` + start + `"}`
	if _, err := store.NewCollection[[]byte](e.st, rollout.KindRollouts, rawCodec{}).Create(e.ctx, "old", []byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.PinGitOps(e.ctx, "a", newCommit, "old"); err != nil {
		t.Fatal(err)
	}
	r, err := e.ctrl.Get(e.ctx, "old")
	if err != nil || r.Spec.Revision != newCommit || len(r.Status.Waves) != 2 || r.Spec.Soak.Duration != time.Minute {
		t.Fatalf("Get(old) = %+v, %v", r, err)
	}
	e.report(t, "a", applied(newCommit))
	e.tick(t)
	e.clk.Step(61 * time.Second)
	if r := e.tick(t); r.Status.Wave != 1 || r.Status.Phase != fr.PhaseProgressing {
		t.Fatalf("legacy rollout after the canary's soak = %+v", r.Status)
	}
	if pin := e.report(t, "b", applied(oldCommit)); pin != newCommit {
		t.Fatalf("second wave pinned %q, want %s", pin, newCommit)
	}
}
