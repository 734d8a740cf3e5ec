// SPDX-License-Identifier: Apache-2.0

package server

import (
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// requestSeconds converts a request's count of seconds (field names it in
// the error) to a duration, refusing a count a time.Duration cannot hold
// (about 292 years) instead of letting the product wrap around.
func requestSeconds(field string, n int64) (time.Duration, error) {
	if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
		return 0, status.Errorf(codes.InvalidArgument, "%s %d is out of range", field, n)
	}
	return time.Duration(n) * time.Second, nil
}

// tokenTTL is the lifetime a CreateJoinToken request asks for: at most
// maxTokenTTL (0 means the registry's default).
func tokenTTL(ttlSeconds int64) (time.Duration, error) {
	ttl, err := requestSeconds("ttl_seconds", ttlSeconds)
	if err != nil {
		return 0, err
	}
	if ttl > maxTokenTTL {
		return 0, status.Errorf(codes.InvalidArgument, "ttl %s is longer than the maximum %s", ttl, maxTokenTTL)
	}
	return ttl, nil
}
