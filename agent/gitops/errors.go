// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"errors"
	"fmt"
)

// SyncError is a failed sync step. Reason is one of the v1alpha1 GitOpsReason*
// constants; it becomes the reason of the Ready condition.
type SyncError struct {
	Reason string
	Err    error
}

func (e *SyncError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *SyncError) Unwrap() error { return e.Err }

func syncErr(reason string, format string, args ...any) error {
	return &SyncError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ErrNoSource is returned by Sync before SetSource gave a source.
var ErrNoSource = errors.New("no gitops source set")

// reasonOf returns the SyncError reason of err, or fallback.
func reasonOf(err error, fallback string) string {
	var se *SyncError
	if errors.As(err, &se) {
		return se.Reason
	}
	return fallback
}
