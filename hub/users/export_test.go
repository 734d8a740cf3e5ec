// SPDX-License-Identifier: Apache-2.0

package users

import (
	"time"

	"golang.org/x/time/rate"
)

// SetJWKSRefetch sets the least time between two JWKS fetches, of a
// verifier that fetched already too (tests).
func SetJWKSRefetch(v *TokenVerifier, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.refetch = d
	if v.keys != nil {
		v.keys.limiter.SetLimit(rate.Every(d))
	}
}
