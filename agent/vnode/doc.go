// SPDX-License-Identifier: Apache-2.0

// Package vnode publishes the agent's GPU pools as virtual-kubelet nodes in
// the hub management cluster, one per (cluster, pool), named
// shoal-<cluster>-<pool>, and serves each node's kubelet API on a port of
// its own for the pods bound to it (/pods, /stats/summary from the members'
// real stats, logs, exec, attach, port-forward). A node's allocatable is the
// pool's free count plus what its members hold, with the per-shape detail in
// annotations (capacity.go). The agent owns each node's Ready condition: it is False
// while the agent cannot reach its own cluster. A node lease is renewed while
// the agent runs, so the nodes go stale when it dies.
//
// virtual-kubelet's nodeutil is not used: it always watches Secrets,
// ConfigMaps and Services cluster-wide, which the agent's scoped hub
// credentials do not (and must not) allow. The node and pod controllers are
// assembled here with a pod informer filtered to the node.
package vnode
