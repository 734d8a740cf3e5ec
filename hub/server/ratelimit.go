// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// DefaultRegisterLimit and DefaultRegisterBurst are Register's rate limit
// per source IP: a burst of 50 attempts (a fleet's agents registering at
// once from behind one NAT address, or a dev fleet on one host), then one
// a second.
const (
	DefaultRegisterLimit rate.Limit = 1
	DefaultRegisterBurst int        = 50
)

// sourceLimiter is a token bucket per source IP. Buckets that refilled
// are dropped now and then, so that the map holds only recent sources.
type sourceLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// newSourceLimiter limits each source to limit calls a second after a
// burst; 0s take the defaults, a negative limit turns limiting off.
func newSourceLimiter(limit rate.Limit, burst int) *sourceLimiter {
	if limit == 0 {
		limit = DefaultRegisterLimit
	}
	if burst <= 0 {
		burst = DefaultRegisterBurst
	}
	return &sourceLimiter{limit: limit, burst: burst, now: time.Now, buckets: map[string]*rate.Limiter{}}
}

// admit takes a token from the calling peer's bucket, or returns
// ResourceExhausted.
func (l *sourceLimiter) admit(ctx context.Context) error {
	if l == nil || l.limit < 0 {
		return nil
	}
	src := sourceIP(ctx)
	if l.allow(src) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Register rate-limited", "source", src)
	return status.Errorf(codes.ResourceExhausted, "too many registrations from %s: retry in a few seconds", src)
}

func (l *sourceLimiter) allow(src string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, ok := l.buckets[src]
	if !ok {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[src] = b
	}
	return b.AllowN(now, 1)
}

// sourceIP is the calling peer's IP (its address without the port).
func sourceIP(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	if host, _, err := net.SplitHostPort(p.Addr.String()); err == nil {
		return host
	}
	return p.Addr.String()
}
