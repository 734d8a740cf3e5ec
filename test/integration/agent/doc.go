// SPDX-License-Identifier: Apache-2.0

// Package agent holds the integration tests of shoal-agent: a hub cluster and
// a workload cluster (real kube-apiservers), a small in-test hub gRPC server
// with real TLS that issues scoped hub-cluster credentials through
// hub/hubcluster, and a real agent.Agent between them.
package agent
