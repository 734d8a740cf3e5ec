// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// began is one term of one part on one replica.
type began struct {
	replica, part string
	l             store.Leadership
	ended         chan struct{}
}

// probeObj is what the test's guarded writes store.
type probeObj struct {
	By string `json:"by"`
}

// recordingParts are the three leader-elected parts of a replica, each
// reporting its terms on terms and running until its term's ctx ends.
func recordingParts(replica string, terms chan<- began) []leaderPart {
	var parts []leaderPart
	for _, e := range []string{scheduler.Election, dispatch.Election, rollout.Election} {
		parts = append(parts, leaderPart{legacyElection: e, lead: func(ctx context.Context, l store.Leadership) error {
			b := began{replica: replica, part: e, l: l, ended: make(chan struct{})}
			terms <- b
			<-ctx.Done()
			close(b.ended)
			return nil
		}})
	}
	return parts
}

// nextTerms waits for one term of every part and checks that they began on
// one replica under one leadership.
func nextTerms(t *testing.T, terms <-chan began, replica string) []began {
	t.Helper()
	var got []began
	seen := map[string]bool{}
	for len(got) < 3 {
		select {
		case b := <-terms:
			if b.replica != replica {
				t.Fatalf("part %s leads on %s; want every part on %s", b.part, b.replica, replica)
			}
			if seen[b.part] {
				t.Fatalf("part %s began twice on %s", b.part, replica)
			}
			seen[b.part] = true
			if len(got) > 0 && b.l != got[0].l {
				t.Fatalf("parts %s and %s lead under different leaderships", b.part, got[0].part)
			}
			if len(got) > 0 && b.l.Revision() != got[0].l.Revision() {
				t.Fatalf("part %s leads at revision %d, part %s at %d: not one leadership", b.part, b.l.Revision(), got[0].part, got[0].l.Revision())
			}
			got = append(got, b)
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of 3 parts began on %s within 15s", len(got), replica)
		}
	}
	return got
}

func noTerm(t *testing.T, terms <-chan began, wait time.Duration) {
	t.Helper()
	select {
	case b := <-terms:
		t.Fatalf("part %s began on %s; want none", b.part, b.replica)
	case <-time.After(wait):
	}
}

func testStore(t *testing.T) (context.Context, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), ElectionTTL: time.Second, Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return ctx, st
}

// TestOneLeaderRunsEveryPart: of two replicas, one runs the scheduler, the
// dispatcher and the rollouts under one leadership; when it stops, every
// part moves to the other replica together, and the deposed leadership's
// guarded writes fail.
func TestOneLeaderRunsEveryPart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, st := testStore(t)
	terms := make(chan began, 16)
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	aDone := make(chan error, 1)
	go func() { aDone <- leaderLoop(st, "hub-a", recordingParts("hub-a", terms))(actx) }()
	a := nextTerms(t, terms, "hub-a")

	bDone := make(chan error, 1)
	go func() { bDone <- leaderLoop(st, "hub-b", recordingParts("hub-b", terms))(ctx) }()
	noTerm(t, terms, time.Second)
	check := leaderCheck(st, "hub-b", LeaderElection)
	if msg, err := check.Check(ctx); err != nil || msg != "hub-a leads" {
		t.Fatalf("hub-b's %s check: %q, %v; want hub-a leads", CheckHubLeader, msg, err)
	}

	held := a[0].l.Held()
	probe := store.NewCollection(st, "leadertest", store.JSONCodec[probeObj]())
	if _, err := st.Txn(ctx).If(held).Then(probe.PutOp("x", probeObj{By: "hub-a"})).Commit(); err != nil {
		t.Fatalf("the leader's guarded write: %v", err)
	}
	stopA()
	for _, b := range a {
		select {
		case <-b.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("part %s still runs on the stopped hub-a", b.part)
		}
	}
	if err := <-aDone; err != nil {
		t.Fatalf("hub-a's leader loop: %v", err)
	}
	b := nextTerms(t, terms, "hub-b")
	if b[0].l.Revision() <= a[0].l.Revision() {
		t.Fatalf("hub-b leads at revision %d, not after hub-a's %d", b[0].l.Revision(), a[0].l.Revision())
	}
	if _, err := st.Txn(ctx).If(held).Then(probe.PutOp("x", probeObj{By: "deposed hub-a"})).Commit(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the deposed leader's guarded write: %v; want ErrConflict", err)
	}
	for _, e := range []string{LeaderElection, scheduler.Election, dispatch.Election, rollout.Election} {
		if who, err := st.Leader(ctx, e); err != nil || who != "hub-b" {
			t.Fatalf("leader of %s: %q, %v; want hub-b", e, who, err)
		}
	}
	if msg, err := check.Check(ctx); err != nil || msg != "this replica (hub-b) leads" {
		t.Fatalf("hub-b's %s check: %q, %v", CheckHubLeader, msg, err)
	}
}

// TestLeaderWaitsForOldReplica: during a rolling upgrade an older replica
// that campaigns in a part's own election still leads it; the new replica
// wins LeaderElection but runs no part until the old one is gone.
func TestLeaderWaitsForOldReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, st := testStore(t)
	old, err := st.Campaign(ctx, rollout.Election, "old")
	if err != nil {
		t.Fatal(err)
	}
	terms := make(chan began, 16)
	go func() { _ = leaderLoop(st, "new", recordingParts("new", terms))(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		who, err := st.Leader(ctx, LeaderElection)
		if err == nil && who == "new" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader of %s: %q, %v; want new", LeaderElection, who, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	noTerm(t, terms, 2*time.Second)
	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	nextTerms(t, terms, "new")
}

// TestPrimaryElectionOfAPartialReplica: a replica running every part (or
// none: it reports the hub's leader) campaigns in LeaderElection; one that
// runs only some campaigns in an election of its set, so a scheduler-only
// and a dispatcher-only replica lead side by side.
func TestPrimaryElectionOfAPartialReplica(t *testing.T) {
	all := recordingParts("x", nil)
	for _, tc := range []struct {
		parts []leaderPart
		want  string
	}{
		{all, LeaderElection},
		{nil, LeaderElection},
		{all[:1], LeaderElection + "/" + scheduler.Election},
		{all[1:2], LeaderElection + "/" + dispatch.Election},
		{all[:2], LeaderElection + "/" + scheduler.Election + "+" + dispatch.Election},
	} {
		if got := primaryElection(tc.parts); got != tc.want {
			t.Errorf("primaryElection of %d parts = %q, want %q", len(tc.parts), got, tc.want)
		}
	}
}
