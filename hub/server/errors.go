// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

// errorCodes is the one table from domain errors to gRPC codes, for every
// service the hub serves (jobs, queues, clusters, GitOps, rollouts); the
// first entry whose error matches (errors.Is) wins. Handlers return domain
// errors as they are and leave the conversion to toStatus.
var errorCodes = []struct {
	err  error
	code codes.Code
}{
	{registry.ErrInvalidToken, codes.Unauthenticated},
	{users.ErrUnauthenticated, codes.Unauthenticated},
	{users.ErrInvalid, codes.InvalidArgument},
	{registry.ErrCertificateRevoked, codes.PermissionDenied},
	{pki.ErrUnknownIdentity, codes.PermissionDenied},
	{registry.ErrInvalid, codes.InvalidArgument},
	{rollout.ErrInvalid, codes.InvalidArgument},
	{pki.ErrBadCSR, codes.InvalidArgument},
	{store.ErrInvalidName, codes.InvalidArgument},
	{store.ErrInvalidContinue, codes.InvalidArgument},
	{registry.ErrClusterExists, codes.AlreadyExists},
	{registry.ErrUIDRegistered, codes.AlreadyExists},
	{store.ErrAlreadyExists, codes.AlreadyExists},
	{registry.ErrNotFound, codes.NotFound},
	{rollout.ErrNotFound, codes.NotFound},
	{store.ErrNotFound, codes.NotFound},
	{errs.ErrPermissionDenied, codes.PermissionDenied},
	{errs.ErrFailedPrecondition, codes.FailedPrecondition},
	{rollout.ErrConflict, codes.FailedPrecondition}, // a rollout's state forbids it: not a write race to retry
	{store.ErrConflict, codes.Aborted},
	{store.ErrCompacted, codes.OutOfRange},
	{registry.ErrHubCluster, codes.Unavailable},
	{errs.ErrUnavailable, codes.Unavailable},
	{store.ErrUnavailable, codes.Unavailable}, // etcd timed out or has no leader: the client retries, maybe on another replica
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
}

// toStatus converts an error returned by a handler into a gRPC status
// error. Errors that already carry a status pass through; errors the table
// does not know become Internal, logged here once, without their text
// reaching the client.
func toStatus(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	if code, ok := codeOf(err); ok {
		return status.Error(code, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	klog.FromContext(ctx).Error(err, "Internal error", "method", method)
	return status.Error(codes.Internal, "internal error in the hub; the hub's log has the details")
}

// codeOf looks err up in the table.
func codeOf(err error) (codes.Code, bool) {
	var invalid *v1alpha1.InvalidError
	var decode *v1alpha1.DecodeError
	if errors.As(err, &invalid) || errors.As(err, &decode) {
		return codes.InvalidArgument, true
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code, true
		}
	}
	return codes.Unknown, false
}
