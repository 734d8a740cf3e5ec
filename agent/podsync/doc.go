// SPDX-License-Identifier: Apache-2.0

// Package podsync runs, in the workload cluster, the pods the hub binds to
// the agent's virtual nodes, and reports their status back.
//
// A hub pod becomes a local pod of the same namespace and name (the namespace
// is created if missing and labelled v1alpha1.LabelManaged=true). Hub-only
// fields are removed (nodeName, the virtual-node toleration, node selectors
// on Shoal's virtual-node labels, the hub's service-account token volume,
// owner references, resolved priority). Placement is node-exact: the hub's
// target-node annotation becomes node affinity metadata.name In [node]; the
// target-level annotation is informational and left as it is.
//
// A Gate (agent/gang) may adjust each local pod before it is created and
// sees every newer hub pod. Local pods are read from the shared cache of
// agent/cluster. Local status flows back to the hub pod; deleting either side
// deletes the other, except that a local pod deleted behind the agent's back
// is not recreated: its hub pod turns Failed with reason
// v1alpha1.ReasonLocalPodDeleted and an event.
package podsync
