// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Defaults of CachedValidator.
const (
	// DefaultVerdictTTL is how long a verdict is reused.
	DefaultVerdictTTL = 30 * time.Second
	// DefaultVerdictEntries bounds the verdicts kept.
	DefaultVerdictEntries = 4096
)

// CachedValidator remembers the verdicts of a TemplateValidator for
// identical templates for a while, so that a pipeline submitting thousands
// of jobs of one template sends it to the hub cluster once per TTL instead
// of once per job. Every template is still judged by the validator's
// verdict: the dry-run's answer is a function of the template's bytes and
// of the API server's configuration (its version, admission plugins,
// policies and webhooks on PodTemplates in its namespace), so an identical
// template gets the same answer until that configuration changes, which
// the TTL bounds. Only verdicts are kept — accepted, or a
// *v1alpha1.InvalidError; a validator that could not judge (unavailable,
// any other error) is asked again the next time. Concurrent calls for one
// template not yet judged wait for the first one's verdict.
type CachedValidator struct {
	next    TemplateValidator
	ttl     time.Duration
	max     int
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*verdict
}

// verdict is one template's answer; done is closed once err is set.
type verdict struct {
	done    chan struct{}
	err     error
	ok      bool // a verdict, not a failure to judge
	expires time.Time
}

// NewCachedValidator caches next's verdicts for ttl (DefaultVerdictTTL
// when 0), at most max of them (DefaultVerdictEntries when 0).
func NewCachedValidator(next TemplateValidator, ttl time.Duration, max int, clk clock.PassiveClock) *CachedValidator {
	if ttl <= 0 {
		ttl = DefaultVerdictTTL
	}
	if max <= 0 {
		max = DefaultVerdictEntries
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &CachedValidator{next: next, ttl: ttl, max: max, clock: clk, entries: map[[sha256.Size]byte]*verdict{}}
}

// Validate returns the verdict on t, the cached one when an identical
// template was judged less than the TTL ago.
func (c *CachedValidator) Validate(ctx context.Context, t *corev1.PodTemplateSpec) error {
	b, err := json.Marshal(t)
	if err != nil {
		return c.next.Validate(ctx, t)
	}
	key := sha256.Sum256(b)
	now := c.clock.Now()
	c.mu.Lock()
	v, found := c.entries[key]
	if found {
		select {
		case <-v.done:
			if !v.ok || now.After(v.expires) {
				found = false
			}
		default: // being judged
		}
	}
	if !found {
		if len(c.entries) >= c.max {
			c.evict(now)
		}
		v = &verdict{done: make(chan struct{})}
		c.entries[key] = v
		c.mu.Unlock()
		v.err = c.next.Validate(ctx, t)
		var inv *v1alpha1.InvalidError
		v.ok = v.err == nil || errors.As(v.err, &inv)
		v.expires = c.clock.Now().Add(c.ttl)
		close(v.done)
		return v.err
	}
	c.mu.Unlock()
	select {
	case <-v.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !v.ok { // the first caller could not get a verdict: ask on our own
		return c.next.Validate(ctx, t)
	}
	return v.err
}

// evict drops the expired and failed entries, or all that are done when
// none is (c.mu held).
func (c *CachedValidator) evict(now time.Time) {
	for k, v := range c.entries {
		select {
		case <-v.done:
			if !v.ok || now.After(v.expires) {
				delete(c.entries, k)
			}
		default:
		}
	}
	if len(c.entries) < c.max {
		return
	}
	for k, v := range c.entries {
		select {
		case <-v.done:
			delete(c.entries, k)
		default:
		}
	}
}
