// SPDX-License-Identifier: Apache-2.0

// Package app builds and runs the whole hub from one Config: the store
// (embedded or external etcd), the PKI, the cluster registry, the jobs and
// queues services, the leader-elected scheduler, dispatcher and rollout
// controller, the gRPC server and the HTTP health and metrics endpoints.
// cmd/shoal-hub only parses flags into a Config, and every test that runs a
// hub in-process runs it through this package.
package app
