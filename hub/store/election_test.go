// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

type campaign struct {
	l   store.Leadership
	err error
}

func campaignAsync(ctx context.Context, s *store.Store, election, id string) <-chan campaign {
	ch := make(chan campaign, 1)
	go func() {
		l, err := s.Campaign(ctx, election, id)
		ch <- campaign{l, err}
	}()
	return ch
}

func waitLeader(t *testing.T, ch <-chan campaign, timeout time.Duration) store.Leadership {
	t.Helper()
	select {
	case c := <-ch:
		if c.err != nil {
			t.Fatal(c.err)
		}
		return c.l
	case <-time.After(timeout):
		t.Fatalf("not elected within %s", timeout)
	}
	return nil
}

func notElected(t *testing.T, ch <-chan campaign) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("elected while another leader holds the election: %+v", c)
	default:
	}
}

func TestElectionFailover(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("scheduler-%d", time.Now().UnixNano())
	if _, err := shared.Leader(ctx, election); !errors.Is(err, store.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v, want ErrNoLeader", err)
	}
	ctxA, crashA := context.WithCancel(ctx)
	defer crashA()
	a := waitLeader(t, campaignAsync(ctxA, shared, election, "hub-a"), 10*time.Second)
	bCh := campaignAsync(ctx, shared, election, "hub-b")

	if id, err := shared.Leader(ctx, election); err != nil || id != "hub-a" {
		t.Fatalf("Leader = %q, %v; want hub-a", id, err)
	}
	ledger := collection(t, "ledger")
	if _, err := shared.Txn(ctx).If(a.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "by-a"})).Commit(); err != nil {
		t.Fatalf("leader write guarded by Held: %v", err)
	}
	notElected(t, bCh)

	// hub-a crashes: its session stops being kept alive; hub-b takes over
	// once the lease (ElectionTTL 2s) expires.
	crashA()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the leader's session ended")
	}
	b := waitLeader(t, bCh, 15*time.Second)
	if b.Revision() <= a.Revision() {
		t.Fatalf("new leader revision %d not after %d", b.Revision(), a.Revision())
	}
	if id, err := shared.Leader(ctx, election); err != nil || id != "hub-b" {
		t.Fatalf("Leader = %q, %v; want hub-b", id, err)
	}
	// A deposed leader's guarded write fails.
	if _, err := shared.Txn(ctx).If(a.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "late-a"})).Commit(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deposed leader write: %v, want ErrConflict", err)
	}

	// Resign hands over at once.
	cCh := campaignAsync(ctx, shared, election, "hub-c")
	notElected(t, cCh)
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	c := waitLeader(t, cCh, 5*time.Second)
	if c.Identity() != "hub-c" {
		t.Fatalf("identity %q", c.Identity())
	}
	if err := c.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCampaignStopsWithContext(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("ctx-%d", time.Now().UnixNano())
	leader := waitLeader(t, campaignAsync(ctx, shared, election, "first"), 10*time.Second)
	defer func() { _ = leader.Resign(ctx) }()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := shared.Campaign(short, election, "second"); err == nil {
		t.Fatal("Campaign returned leadership while another leader holds it")
	}
	if id, _ := shared.Leader(ctx, election); id != "first" {
		t.Fatalf("leader %q after a cancelled campaign", id)
	}
}

// TestCampaignAllLeadsEveryElection: CampaignAll holds the first election
// while it waits for a later one that another campaigner leads, returns
// once it leads them all, and its Held guard, the first election's,
// fails as soon as the leadership is lost, when every election is free
// again for the next campaigner.
func TestCampaignAllLeadsEveryElection(t *testing.T) {
	ctx := testCtx(t)
	primary := fmt.Sprintf("leader-%d", time.Now().UnixNano())
	legacy := primary + "-legacy"
	old := waitLeader(t, campaignAsync(ctx, shared, legacy, "old"), 10*time.Second)

	ctxA, crashA := context.WithCancel(ctx)
	defer crashA()
	aCh := make(chan campaign, 1)
	go func() {
		l, err := shared.CampaignAll(ctxA, "hub-a", primary, legacy)
		aCh <- campaign{l, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for who, _ := shared.Leader(ctx, primary); who != "hub-a"; who, _ = shared.Leader(ctx, primary) {
		if time.Now().After(deadline) {
			t.Fatalf("leader of %s %q; want hub-a, waiting for %s", primary, who, legacy)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	notElected(t, aCh)
	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	a := waitLeader(t, aCh, 5*time.Second)
	for _, e := range []string{primary, legacy} {
		if who, err := shared.Leader(ctx, e); err != nil || who != "hub-a" {
			t.Fatalf("leader of %s: %q, %v; want hub-a", e, who, err)
		}
	}
	ledger := collection(t, "ledger")
	if _, err := shared.Txn(ctx).If(a.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "by-a"})).Commit(); err != nil {
		t.Fatalf("leader write guarded by Held: %v", err)
	}

	bCh := make(chan campaign, 1)
	go func() {
		l, err := shared.CampaignAll(ctx, "hub-b", primary, legacy)
		bCh <- campaign{l, err}
	}()
	crashA() // hub-a's session is no longer kept alive: its lease expires
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the leader's session ended")
	}
	b := waitLeader(t, bCh, 15*time.Second)
	defer func() { _ = b.Resign(ctx) }()
	if b.Revision() <= a.Revision() {
		t.Fatalf("new leader revision %d not after %d", b.Revision(), a.Revision())
	}
	for _, e := range []string{primary, legacy} {
		if who, err := shared.Leader(ctx, e); err != nil || who != "hub-b" {
			t.Fatalf("leader of %s: %q, %v; want hub-b", e, who, err)
		}
	}
	if _, err := shared.Txn(ctx).If(a.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "late-a"})).Commit(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deposed leader write: %v, want ErrConflict", err)
	}
}
