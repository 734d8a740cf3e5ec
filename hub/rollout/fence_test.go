// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestDeposedRolloutLeaderCannotWrite: the canary's pin is lost (as in
// TestRepairLostPins); a tick of a leader whose election is lost
// neither writes the rollout nor re-pins the canary; the same tick under a
// held leadership does both.
func TestDeposedRolloutLeaderCannotWrite(t *testing.T) {
	e := newEnv(t)
	fleetOf(t, e, "a", "b")
	if _, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: "r1", Revision: newCommit, Waves: "1,100%", Soak: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.PinGitOps(e.ctx, "a", "", ""); err != nil {
		t.Fatal(err)
	}
	before, err := e.ctrl.Get(e.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	old, err := e.st.Campaign(e.ctx, rollout.Election, "old")
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl.LeadWith(old)
	if err := old.Resign(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.TickAll(e.ctx); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deposed tick: %v, want ErrConflict", err)
	}
	after, err := e.ctrl.Get(e.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("a deposed leader's tick wrote the rollout: %+v", after.Status)
	}
	if c, _, _ := e.clusters.Get(e.ctx, "a"); c.Status.GitOps != nil && c.Status.GitOps.PinnedCommit != "" {
		t.Fatalf("a deposed leader re-pinned the canary to %s", c.Status.GitOps.PinnedCommit)
	}

	cur, err := e.st.Campaign(e.ctx, rollout.Election, "new")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Resign(e.ctx) }()
	e.ctrl.LeadWith(cur)
	if err := e.ctrl.TickAll(e.ctx); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := e.clusters.Get(e.ctx, "a"); c.Status.GitOps == nil || c.Status.GitOps.PinnedCommit != newCommit {
		t.Fatalf("the leader's tick did not re-pin the canary: %+v", c.Status.GitOps)
	}
}
