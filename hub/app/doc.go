// SPDX-License-Identifier: Apache-2.0

// Package app builds and runs the whole hub from one Config: the store
// (embedded or external etcd), the PKI, the cluster registry, the jobs and
// queues services, the scheduler, dispatcher and rollout controller (all
// three on the replica that leads LeaderElection, under its one guard:
// leader.go), the gRPC server and the HTTP health and metrics endpoints.
// cmd/shoal-hub only parses flags into a Config, and every test that runs a
// hub in-process runs it through this package.
package app
