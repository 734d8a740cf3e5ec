// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// TestRestartRevokesOwnSessions: a replica that dies leading leaves its
// election key for the TTL (30s here); the next process on its session
// file revokes it at Open, so the election is free at once and another
// campaigner wins without waiting out the TTL.
func TestRestartRevokesOwnSessions(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("restart-%d", time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "sessions")
	open := func() *store.Store {
		s, err := store.Open(ctx, store.Config{Endpoints: []string{shared.ClientURL()}, ElectionTTL: 30 * time.Second, SessionFile: file})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := open()
	if old.RevokedSessions() != 0 {
		t.Fatalf("revoked %d sessions of no previous process", old.RevokedSessions())
	}
	if _, err := old.Campaign(ctx, election, "old"); err != nil {
		t.Fatal(err)
	}
	_ = old.Close() // dies leading: the session is neither resigned nor revoked
	if id, err := shared.Leader(ctx, election); err != nil || id != "old" {
		t.Fatalf("Leader after the crash = %q, %v; want the dead process's key, held for its TTL", id, err)
	}

	next := open()
	defer func() { _ = next.Close() }()
	if next.RevokedSessions() != 1 {
		t.Fatalf("revoked %d sessions, want 1", next.RevokedSessions())
	}
	if id, err := shared.Leader(ctx, election); !errors.Is(err, store.ErrNoLeader) {
		t.Fatalf("Leader after the restart = %q, %v; want ErrNoLeader", id, err)
	}
	waitLeader(t, campaignAsync(ctx, shared, election, "standby"), 2*time.Second)
}

func TestLeaderStateCheck(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("state-%d", time.Now().UnixNano())
	st := store.NewLeaderState(shared, election, "hub-a")
	if msg, err := st.Check(ctx); err != nil || msg != "no leader elected" {
		t.Fatalf("no leader: %q, %v", msg, err)
	}
	other := waitLeader(t, campaignAsync(ctx, shared, election, "hub-b"), 5*time.Second)
	if msg, err := st.Check(ctx); err != nil || msg != "following hub-b" {
		t.Fatalf("follower: %q, %v", msg, err)
	}
	if err := other.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// Won by this replica, its part not started yet: not ready.
	self := waitLeader(t, campaignAsync(ctx, shared, election, "hub-a"), 5*time.Second)
	if _, err := st.Check(ctx); !errors.Is(err, store.ErrLeaderNotSynced) {
		t.Fatalf("won, part not started: %v, want ErrLeaderNotSynced", err)
	}
	st.Lead(42)
	if _, err := st.Check(ctx); !errors.Is(err, store.ErrLeaderNotSynced) {
		t.Fatalf("leader before its first round: %v, want ErrLeaderNotSynced", err)
	}
	st.Synced(errors.New("informers not synced"))
	if _, err := st.Check(ctx); !errors.Is(err, store.ErrLeaderNotSynced) || !strings.Contains(err.Error(), "informers not synced") {
		t.Fatalf("leader after a failed round: %v", err)
	}
	st.Synced(nil)
	if msg, err := st.Check(ctx); err != nil || msg != "leading since revision 42" {
		t.Fatalf("synced leader: %q, %v", msg, err)
	}
	st.Lost()
	if err := self.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if msg, err := st.Check(ctx); err != nil || msg != "no leader elected" {
		t.Fatalf("after the loss: %q, %v", msg, err)
	}
}
