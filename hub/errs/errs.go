// SPDX-License-Identifier: Apache-2.0

// Package errs holds the domain errors that the hub's job and queue intake
// return, beyond those of hub/store and apis/v1alpha1. hub/server converts
// each to one gRPC code in its error table:
//
//	*v1alpha1.InvalidError, *v1alpha1.DecodeError  → InvalidArgument
//	store.ErrInvalidName, store.ErrInvalidContinue → InvalidArgument
//	store.ErrNotFound                              → NotFound
//	store.ErrAlreadyExists                         → AlreadyExists
//	ErrFailedPrecondition (and *PreconditionError) → FailedPrecondition
//	store.ErrConflict                              → Aborted
//	store.ErrCompacted                             → OutOfRange (list or watch again)
//	ErrUnavailable (and *UnavailableError)         → Unavailable (try again later)
//	ErrPermissionDenied                            → PermissionDenied
//
// Match them with errors.Is and errors.As, never by message.
package errs

import (
	"errors"
	"fmt"
)

// ErrFailedPrecondition means the request is well formed but the system is
// not in a state to perform it: a job's queue does not exist, a queue still
// has jobs or children, a queue is being deleted.
var ErrFailedPrecondition = errors.New("failed precondition")

// PreconditionError is an ErrFailedPrecondition that says what is wrong and
// what to do about it.
type PreconditionError struct {
	// Reason says what is wrong.
	Reason string
	// Hint says what to do, when there is something to do.
	Hint string
}

// Error returns the reason and the hint.
func (e *PreconditionError) Error() string {
	if e.Hint == "" {
		return e.Reason
	}
	return e.Reason + "; " + e.Hint
}

// Is makes errors.Is(err, ErrFailedPrecondition) hold.
func (e *PreconditionError) Is(target error) bool { return target == ErrFailedPrecondition }

// Precondition returns a *PreconditionError.
func Precondition(reason, hint string) error {
	return &PreconditionError{Reason: reason, Hint: hint}
}

// kindError is an error of a kind (a sentinel such as store.ErrNotFound)
// with a message of its own for people.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() error { return e.kind }

// Of returns an error that errors.Is kind and reads as the formatted
// message alone, without the sentinel's text: for messages that say what was
// wrong and what to do ("job \"a\" not found; `shoal job list` shows the jobs").
func Of(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// ErrUnavailable means a system the hub depends on (the hub management
// cluster) could not be reached or refused the hub's own identity: the
// request itself may be fine and may succeed later, once an operator has
// fixed the dependency.
var ErrUnavailable = errors.New("unavailable")

// UnavailableError is an ErrUnavailable that names the dependency and keeps
// the cause (errors.Is and errors.As reach it).
type UnavailableError struct {
	// Dependency names what could not be used ("the hub cluster").
	Dependency string
	// Cause is the error the dependency returned.
	Cause error
}

// Error names the dependency and the cause.
func (e *UnavailableError) Error() string {
	return e.Dependency + " is unavailable: " + e.Cause.Error()
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unavailable returns an *UnavailableError: dependency could not be used
// because of cause.
func Unavailable(dependency string, cause error) error {
	return &UnavailableError{Dependency: dependency, Cause: cause}
}

// ErrPermissionDenied means the caller is known but its identity does not
// allow the request (a role binding is missing, the object is another
// user's, the user was revoked); hub/server answers PermissionDenied.
var ErrPermissionDenied = errors.New("permission denied")

// Denied returns an ErrPermissionDenied with a formatted message for people.
func Denied(format string, args ...any) error { return Of(ErrPermissionDenied, format, args...) }
