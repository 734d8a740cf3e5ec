// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Errors returned by the store; test for them with errors.Is.
var (
	// ErrNotFound means the object does not exist.
	ErrNotFound = errors.New("store: object not found")
	// ErrAlreadyExists means Create found an object under that name.
	ErrAlreadyExists = errors.New("store: object already exists")
	// ErrConflict means the object changed since the revision the caller
	// read (optimistic concurrency), or a Txn guard did not hold.
	ErrConflict = errors.New("store: revision conflict")
	// ErrCompacted means the requested revision is older than etcd's
	// compacted history: list again and watch from the new revision.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrTxnTooLarge means a transaction has more operations than etcd's
	// --max-txn-ops or more bytes than its --max-request-bytes.
	ErrTxnTooLarge = errors.New("store: transaction too large for etcd")
	// ErrInvalidContinue means a List continue token that this collection
	// did not issue.
	ErrInvalidContinue = errors.New("store: invalid continue token")
	// ErrInvalidName means an empty or malformed kind or name.
	ErrInvalidName = errors.New("store: invalid name")
	// ErrUnavailable means etcd could not answer in time: no leader, a
	// leader change, or a request that timed out in raft. The operation
	// may or may not have been applied; try again (a create then finds
	// ErrAlreadyExists, an update ErrConflict).
	ErrUnavailable = errors.New("store: etcd unavailable")
)

// unavailable are etcd's errors for a cluster that cannot answer now.
var unavailable = []error{
	rpctypes.ErrTimeout, rpctypes.ErrGRPCTimeout,
	rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrGRPCTimeoutDueToLeaderFail,
	rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrGRPCTimeoutDueToConnectionLost,
	rpctypes.ErrNoLeader, rpctypes.ErrGRPCNoLeader,
	rpctypes.ErrLeaderChanged, rpctypes.ErrGRPCLeaderChanged,
}

// mapErr converts etcd client errors into the store's typed errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrGRPCCompacted) {
		return errors.Join(ErrCompacted, err)
	}
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return errors.Join(ErrTxnTooLarge, err)
	}
	for _, u := range unavailable {
		if errors.Is(err, u) {
			return errors.Join(ErrUnavailable, err)
		}
	}
	return err
}

// resultLabel names the outcome of an operation for metrics.
func resultLabel(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrAlreadyExists):
		return "already_exists"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrCompacted):
		return "compacted"
	default:
		return "error"
	}
}
