// SPDX-License-Identifier: Apache-2.0

// Package hub holds the integration tests of the real shoal-hub binary:
// TLS and authentication, join tokens and registration, agent certificates
// and their revocation, restarts, against embedded etcd and a 3-member
// external etcd cluster with a member stopped during the run.
package hub
