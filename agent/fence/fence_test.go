// SPDX-License-Identifier: Apache-2.0

package fence

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// stopper records FailAll calls and fails while err is set.
type stopper struct {
	calls   int
	reasons []string
	err     error
}

func (s *stopper) FailAll(_ context.Context, reason, _ string) error {
	s.calls++
	s.reasons = append(s.reasons, reason)
	return s.err
}

func TestFenceStopsAfterTimeoutWithoutContact(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &stopper{}
	f := New(5*time.Second, s, clk)

	if err := f.Allowed(); err == nil {
		t.Fatal("creates allowed before the first contact with the hub")
	}
	f.Contact(clk.Now())
	if err := f.Allowed(); err != nil {
		t.Fatalf("creates refused right after a contact: %v", err)
	}
	clk.Step(5 * time.Second)
	f.Check(ctx)
	if s.calls != 0 || f.Fenced() {
		t.Fatalf("fenced at exactly the timeout: calls=%d", s.calls)
	}
	clk.Step(time.Millisecond)
	var fe *FencedError
	if err := f.Allowed(); !errors.As(err, &fe) {
		t.Fatalf("creates allowed past the timeout: %v", err)
	}
	f.Check(ctx)
	if s.calls != 1 || s.reasons[0] != v1alpha1.ReasonFenced || !f.Fenced() {
		t.Fatalf("not fenced past the timeout: calls=%d reasons=%v", s.calls, s.reasons)
	}
	f.Check(ctx)
	if s.calls != 1 {
		t.Fatalf("members stopped again after a successful stop: calls=%d", s.calls)
	}

	f.Contact(clk.Now())
	if f.Fenced() || f.Allowed() != nil {
		t.Fatal("the fence holds after the hub was reached again")
	}
	clk.Step(3 * time.Second)
	f.Check(ctx)
	if s.calls != 1 {
		t.Fatalf("fenced within the timeout of the new contact: calls=%d", s.calls)
	}
}

func TestFenceCountsFromStartBeforeFirstContact(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &stopper{}
	f := New(5*time.Second, s, clk)
	clk.Step(4 * time.Second)
	f.Check(context.Background())
	if s.calls != 0 {
		t.Fatal("fenced before the timeout since the start")
	}
	clk.Step(2 * time.Second)
	f.Check(context.Background())
	if s.calls != 1 {
		t.Fatal("a (re)started agent that never reached the hub did not fence")
	}
}

func TestFenceRetriesFailedStopAndIgnoresStaleContact(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &stopper{err: errors.New("workload cluster down")}
	f := New(5*time.Second, s, clk)
	start := clk.Now()
	f.Contact(start)
	clk.Step(6 * time.Second)
	f.Check(ctx)
	f.Check(ctx)
	if s.calls != 2 {
		t.Fatalf("a failed stop was not retried: calls=%d", s.calls)
	}
	// A call that started before the timeout but returned late does not lift it.
	f.Contact(start)
	if !f.Fenced() || f.Allowed() == nil {
		t.Fatal("a contact older than the timeout lifted the fence")
	}
	s.err = nil
	f.Check(ctx)
	f.Check(ctx)
	if s.calls != 3 {
		t.Fatalf("stop after recovery: calls=%d, want 3", s.calls)
	}
}

func TestFenceRunStopsOnTicks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan struct{})
	s := &signalStopper{done: done}
	f := New(2*time.Second, s, clk)
	go func() { _ = f.Run(ctx) }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("Run did not fence after the timeout")
		case <-time.After(10 * time.Millisecond):
			clk.Step(200 * time.Millisecond)
		}
	}
}

// signalStopper closes done on its first call.
type signalStopper struct{ done chan struct{} }

func (s *signalStopper) FailAll(context.Context, string, string) error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	return nil
}

// TestLimitFencesByTheHubsShorterTimeout: an agent whose own timeout (10 s)
// exceeds the hub's (4 s) fences by the hub's once told it, and says the
// value changed once; a hub timeout longer than the agent's changes
// nothing.
func TestLimitFencesByTheHubsShorterTimeout(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &stopper{}
	f := New(10*time.Second, s, clk)
	if !f.Limit(ctx, 4*time.Second) || f.Limit(ctx, 4*time.Second) {
		t.Fatal("Limit did not report the first value as a change, or reported the same value again")
	}
	if got := f.Timeout(); got != 4*time.Second {
		t.Fatalf("timeout in force %s, want the hub's 4s", got)
	}
	f.Contact(clk.Now())
	clk.Step(4*time.Second + time.Millisecond)
	f.Check(ctx)
	if s.calls != 1 || !f.Fenced() {
		t.Fatalf("not fenced past the hub's timeout: calls=%d", s.calls)
	}

	g := New(3*time.Second, &stopper{}, clk)
	if !g.Limit(ctx, 20*time.Second) || g.Timeout() != 3*time.Second || g.HubTimeout() != 20*time.Second {
		t.Fatalf("a longer hub timeout: in force %s, hub %s; want 3s and 20s", g.Timeout(), g.HubTimeout())
	}
	if g.Limit(ctx, 0) || g.HubTimeout() != 20*time.Second {
		t.Fatal("a reply without the hub's timeout changed it")
	}
}
