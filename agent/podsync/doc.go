// Package podsync runs, in the workload cluster, the pods the hub binds to
// the agent's virtual nodes, and reports their status back.
//
// A hub pod becomes a local pod of the same namespace and name (the namespace
// is created if missing and labelled shoal.dev/managed=true). Hub-only fields
// are removed (nodeName, the shoal.dev/virtual toleration, node selectors on
// virtual-node labels, the hub's service-account token volume, owner
// references, resolved priority) and node affinity is set from the target
// the hub wrote into the pod's annotations:
//
//	shoal.dev/target-node:   a node of this cluster            → metadata.name In [node]
//	shoal.dev/target-domain: a topology domain as named by
//	                         federation/inventory (node:N, clique:C, rack:R,
//	                         block:B, cluster)                   → label In [value]
//	shoal.dev/target-level:  the domain's level (informative; used when the
//	                         domain carries no prefix)
//
// Local status flows back to the hub pod; deleting either side deletes the
// other, except that a local pod deleted behind the agent's back is not
// recreated: its hub pod turns Failed with reason LocalPodDeleted and an event.
package podsync
