// SPDX-License-Identifier: Apache-2.0

package server

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSecondsDoNotWrap: 18446744074 s times 10^9 wraps around int64 to
// 0.29 s, which used to pass the 30-day bound of CreateJoinToken and the
// sign check of CreateRollout (found while writing FuzzRequests;
// its corpus keeps the case).
func TestSecondsDoNotWrap(t *testing.T) {
	for _, n := range []int64{18446744074, 9223372037, -9223372037, 1 << 62} {
		if d, err := tokenTTL(n); status.Code(err) != codes.InvalidArgument {
			t.Errorf("tokenTTL(%d) = %s, %v; want InvalidArgument", n, d, err)
		}
		if d, err := requestSeconds("soak_seconds", n); status.Code(err) != codes.InvalidArgument {
			t.Errorf("requestSeconds(%d) = %s, %v; want InvalidArgument", n, d, err)
		}
	}
	if d, err := tokenTTL(3600); err != nil || d != time.Hour {
		t.Errorf("tokenTTL(3600) = %s, %v; want 1h", d, err)
	}
	if d, err := tokenTTL(31 * 24 * 3600); status.Code(err) != codes.InvalidArgument {
		t.Errorf("tokenTTL(31 days) = %s, %v; want InvalidArgument", d, err)
	}
	if d, err := requestSeconds("soak_seconds", 9223372036); err != nil || d != 9223372036*time.Second {
		t.Errorf("requestSeconds(9223372036) = %s, %v", d, err)
	}
}
