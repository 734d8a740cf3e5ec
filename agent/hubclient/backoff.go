// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is exponential backoff with full jitter.
type Backoff struct {
	Initial, Max time.Duration
	attempt      int
}

// Next returns the next wait: a random duration in [d/2, d] where d doubles
// from Initial up to Max.
func (b *Backoff) Next() time.Duration {
	d := b.Initial << min(b.attempt, 20)
	if d <= 0 || d > b.Max {
		d = b.Max
	}
	b.attempt++
	return d/2 + rand.N(d/2+1)
}

// Reset starts over after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Sleep waits d or until ctx ends; it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
