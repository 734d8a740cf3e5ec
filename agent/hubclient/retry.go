// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Retryable reports whether a failed call may succeed when retried (the hub
// is unreachable or busy), as opposed to a refusal (bad token, pin mismatch).
func Retryable(err error) bool {
	if errors.Is(err, ErrCAHashMismatch) {
		return false
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok {
			switch s.Code() {
			case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
				return true
			default:
				return false
			}
		}
	}
	return false
}
