// SPDX-License-Identifier: Apache-2.0

// Package cluster is the agent's one informer cache of its workload cluster:
// Nodes and Pods, watched once and read by every agent part (inventory, the
// gang gate, the pod syncer) through listers and indexes, in the way Armada's
// executor reads its cluster through one ClusterContext. Parts add their
// event handlers and wait for the cache (and their handler) to sync; none
// builds an informer of its own.
package cluster
