// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shoal-dev/shoal/hub/store"
)

// term is one call of a RunElected fn: its leadership, and a channel
// closed when its ctx ended.
type term struct {
	l     store.Leadership
	ended chan struct{}
}

// recordTerms returns a LeaderFunc that reports each term on the channel
// and runs until its ctx ends.
func recordTerms() (store.LeaderFunc, <-chan term) {
	terms := make(chan term, 8)
	return func(ctx context.Context, l store.Leadership) error {
		t := term{l: l, ended: make(chan struct{})}
		terms <- t
		<-ctx.Done()
		close(t.ended)
		return nil
	}, terms
}

func runElected(ctx context.Context, election, identity string, fn store.LeaderFunc) <-chan error {
	done := make(chan error, 1)
	go func() { done <- shared.RunElected(ctx, election, identity, fn) }()
	return done
}

func nextTerm(t *testing.T, terms <-chan term, timeout time.Duration) term {
	t.Helper()
	select {
	case tm := <-terms:
		return tm
	case <-time.After(timeout):
		t.Fatalf("no term began within %s", timeout)
	}
	return term{}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string, timeout time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

func waitReturned(t *testing.T, done <-chan error, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatalf("RunElected did not return within %s", timeout)
	}
	return nil
}

// TestRunElectedHandsOver: one of two replicas leads; when its ctx ends
// its fn's ctx ends, it resigns and the standby leads at once.
func TestRunElectedHandsOver(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("elected-%d", time.Now().UnixNano())
	fnA, termsA := recordTerms()
	ctxA, stopA := context.WithCancel(ctx)
	defer stopA()
	doneA := runElected(ctxA, election, "hub-a", fnA)
	a := nextTerm(t, termsA, 10*time.Second)
	if a.l.Identity() != "hub-a" {
		t.Fatalf("term identity %q", a.l.Identity())
	}

	fnB, termsB := recordTerms()
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneB := runElected(ctxB, election, "hub-b", fnB)
	select {
	case tm := <-termsB:
		t.Fatalf("standby led while hub-a leads: %s", tm.l.Identity())
	case <-time.After(500 * time.Millisecond):
	}
	if id, err := shared.Leader(ctx, election); err != nil || id != "hub-a" {
		t.Fatalf("Leader = %q, %v; want hub-a", id, err)
	}

	stopA()
	waitClosed(t, a.ended, "hub-a's fn ctx ends with RunElected's", 5*time.Second)
	if err := waitReturned(t, doneA, 10*time.Second); err != nil {
		t.Fatalf("RunElected after its ctx ended: %v, want nil", err)
	}
	// Resigned, not expired: hub-b leads well before the 2s TTL.
	b := nextTerm(t, termsB, 1500*time.Millisecond)
	if b.l.Revision() <= a.l.Revision() {
		t.Fatalf("hub-b's revision %d not after hub-a's %d", b.l.Revision(), a.l.Revision())
	}
	stopB()
	if err := waitReturned(t, doneB, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Leader(ctx, election); !errors.Is(err, store.ErrNoLeader) {
		t.Fatalf("Leader after both stopped: %v, want ErrNoLeader", err)
	}
}

// TestRunElectedLeadershipLoss: when the leader's lease is revoked (as when
// etcd expires it), fn's ctx is cancelled at once, a write guarded by the
// old term fails, and RunElected campaigns again and starts a new term.
func TestRunElectedLeadershipLoss(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("lost-%d", time.Now().UnixNano())
	fn, terms := recordTerms()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := runElected(rctx, election, "hub-a", fn)
	first := nextTerm(t, terms, 10*time.Second)

	revokeLeaderLease(ctx, t, election)
	waitClosed(t, first.ended, "fn's ctx ends when leadership is lost", 5*time.Second)
	ledger := collection(t, "lost")
	if _, err := shared.Txn(ctx).If(first.l.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "late"})).Commit(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write guarded by the lost term: %v, want ErrConflict", err)
	}
	second := nextTerm(t, terms, 10*time.Second)
	if second.l.Revision() <= first.l.Revision() {
		t.Fatalf("new term's revision %d not after %d", second.l.Revision(), first.l.Revision())
	}
	if _, err := shared.Txn(ctx).If(second.l.Held()).Then(ledger.PutOp("gpu", testObj{Spec: "new"})).Commit(); err != nil {
		t.Fatalf("write guarded by the new term: %v", err)
	}
	stop()
	if err := waitReturned(t, done, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestRunElectedFnError: fn failing on its own while leading ends
// RunElected with its error, after resigning.
func TestRunElectedFnError(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("fails-%d", time.Now().UnixNano())
	boom := errors.New("boom")
	done := runElected(ctx, election, "hub-a", func(context.Context, store.Leadership) error { return boom })
	err := waitReturned(t, done, 10*time.Second)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), election) {
		t.Fatalf("RunElected: %v, want boom naming the election", err)
	}
	if _, err := shared.Leader(ctx, election); !errors.Is(err, store.ErrNoLeader) {
		t.Fatalf("Leader after fn failed: %v, want ErrNoLeader (resigned)", err)
	}
}

// TestRunElectedStopsWhileCampaigning: a standby returns nil as soon as its
// ctx ends, without ever running fn.
func TestRunElectedStopsWhileCampaigning(t *testing.T) {
	ctx := testCtx(t)
	election := fmt.Sprintf("standby-%d", time.Now().UnixNano())
	leader := waitLeader(t, campaignAsync(ctx, shared, election, "first"), 10*time.Second)
	defer func() { _ = leader.Resign(ctx) }()
	sctx, stop := context.WithCancel(ctx)
	done := runElected(sctx, election, "second", func(context.Context, store.Leadership) error {
		t.Error("standby ran fn while another leader holds the election")
		return nil
	})
	time.Sleep(200 * time.Millisecond) // let it campaign
	stop()
	if err := waitReturned(t, done, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// revokeLeaderLease revokes the lease behind the election's leader key
// through a client of its own, as etcd does when the lease expires.
func revokeLeaderLease(ctx context.Context, t *testing.T, election string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{shared.ClientURL()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(ctx, shared.Prefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "/"+election+"/") && kv.Lease != 0 {
			if _, err := cli.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no leader key of election %s in %d keys", election, len(resp.Kvs))
}
