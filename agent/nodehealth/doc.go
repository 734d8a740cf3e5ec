// SPDX-License-Identifier: Apache-2.0

// Package nodehealth stops gang members whose node in the workload cluster
// failed, within seconds rather than after the workload cluster's pod
// eviction timeout (300 s by default), so that the hub restarts the gang
// whole at once.
//
// A Watcher follows the nodes and pods of the shared cache of agent/cluster.
// A node fails a gang member (a managed local pod with an epoch annotation,
// bound to the node or prepared to target it) when, for longer than the
// grace (Config.Grace, default 10 s, measured on the agent's clock from the
// moment it first saw the failure):
//
//   - its Ready condition is False or Unknown, or it was deleted
//     (v1alpha1.ReasonNodeNotReady);
//   - its allocatable of a GPU resource the member asks for is below what
//     the non-terminated pods bound to it hold: the device plugin removed
//     unhealthy GPUs (v1alpha1.ReasonGPUUnhealthy; bound members only);
//   - it carries a taint, or a condition with status True, that
//     Config.Taints or Config.Conditions name (v1alpha1.ReasonGPUUnhealthy).
//
// The member is stopped through a Stopper (podsync.Syncer.Fail): its hub pod
// turns Failed with the reason at once, then the local pod is deleted, with
// grace 0 when the node is not Ready (its kubelet cannot run a graceful stop)
// and the pod's own grace otherwise. A failure that clears within the grace
// stops nothing.
package nodehealth
