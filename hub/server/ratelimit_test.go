// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

func peerCtx(ip string, port int) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}})
}

// TestSourceLimiter: a source gets its burst, then ResourceExhausted until
// its bucket refills; another source (and another port of the same IP)
// is counted apart (resp. together); idle buckets are swept.
func TestSourceLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newSourceLimiter(1, 3)
	l.now = func() time.Time { return now }
	for i := range 3 {
		if err := l.admit(peerCtx("10.0.0.1", 1000+i)); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	err := l.admit(peerCtx("10.0.0.1", 2000))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("call past the burst from the same IP on another port: %v, want ResourceExhausted", err)
	}
	if err := l.admit(peerCtx("10.0.0.2", 1000)); err != nil {
		t.Fatalf("another source: %v", err)
	}
	now = now.Add(1100 * time.Millisecond)
	if err := l.admit(peerCtx("10.0.0.1", 1000)); err != nil {
		t.Fatalf("after a second the bucket holds a token: %v", err)
	}
	if err := l.admit(peerCtx("10.0.0.1", 1000)); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second call after one second: %v, want ResourceExhausted", err)
	}
	now = now.Add(2 * time.Minute)
	_ = l.admit(peerCtx("10.0.0.3", 1))
	l.mu.Lock()
	n := len(l.buckets)
	l.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d buckets after the sweep, want only the new source's", n)
	}
	if err := newSourceLimiter(-1, 0).admit(peerCtx("10.0.0.1", 1)); err != nil {
		t.Fatalf("disabled limiter: %v", err)
	}
}
