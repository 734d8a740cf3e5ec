// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"errors"
	"time"

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

// RetryableCall reports whether a failed call may succeed when made again:
// Retryable, or the call ran out of its own time (its context's deadline).
func RetryableCall(err error) bool {
	return Retryable(err) || errors.Is(err, context.DeadlineExceeded)
}

// Resend calls send, each call bounded by timeout, until it succeeds, fails
// in a way another call cannot mend (not RetryableCall: a refusal), ctx
// ends, or it made attempts calls, waiting a backoff from bo before each
// retry; onRetry, when not nil, is told of each retry before its wait. It
// returns how many calls it made and the last one's error.
func Resend(ctx context.Context, attempts int, timeout time.Duration, bo Backoff, send func(context.Context) error,
	onRetry func(err error, attempt int, wait time.Duration)) (int, error) {
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, timeout)
		err := send(callCtx)
		cancel()
		if err == nil || ctx.Err() != nil || !RetryableCall(err) || attempt >= attempts {
			return attempt, err
		}
		wait := bo.Next()
		if onRetry != nil {
			onRetry(err, attempt, wait)
		}
		if !Sleep(ctx, wait) {
			return attempt, err
		}
	}
}
