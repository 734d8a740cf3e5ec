// SPDX-License-Identifier: Apache-2.0

package rollout

import "errors"

// Errors returned by this package; the error table of hub/server maps them to
// gRPC codes (InvalidArgument, NotFound, FailedPrecondition).
var (
	// ErrInvalid is a bad argument (source, waves, selector, revision).
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound is an unknown cluster or rollout.
	ErrNotFound = errors.New("not found")
	// ErrConflict is a rollout that clashes with another (name taken, a
	// cluster already in a running rollout) or a state that does not allow
	// the operation.
	ErrConflict = errors.New("conflict")
)
