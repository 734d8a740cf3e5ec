// SPDX-License-Identifier: Apache-2.0

package registry

import "errors"

// Errors returned by the registry; the hub server maps them to gRPC codes.
var (
	// ErrInvalidToken means a join token that is malformed, unknown, expired,
	// revoked or used up (the message says which).
	ErrInvalidToken = errors.New("join token refused")
	// ErrClusterExists means the cluster name is taken.
	ErrClusterExists = errors.New("cluster name already registered")
	// ErrUIDRegistered means a cluster with that UID is already registered.
	ErrUIDRegistered = errors.New("cluster UID already registered")
	// ErrInvalid means a bad argument: cluster name, UID, CSR or inventory.
	ErrInvalid = errors.New("invalid argument")
	// ErrCertificateRevoked means an agent certificate that is not the
	// current one of a registered cluster (the cluster was removed or
	// registered again).
	ErrCertificateRevoked = errors.New("agent certificate revoked")
	// ErrNotFound means no such cluster, inventory or token.
	ErrNotFound = errors.New("not found")
	// ErrHubCluster means the hub management cluster could not issue or
	// revoke an agent's credentials.
	ErrHubCluster = errors.New("hub management cluster")
)
