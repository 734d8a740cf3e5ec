// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Annotations the agent writes on its virtual nodes in the hub cluster: the
// per-shape detail of the pool of real nodes a virtual node stands for,
// which one allocatable figure cannot carry. Counts are of the pool's
// resource (whole GPUs or MIG slices) and are refreshed with every
// inventory the agent builds.
const (
	// AnnotationPoolNodes is the number of real nodes in the pool.
	AnnotationPoolNodes = Prefix + "pool-nodes"
	// AnnotationPoolFree is the free count summed over the pool's Ready,
	// uncordoned nodes (neither requested by a pod nor on an unschedulable node).
	AnnotationPoolFree = Prefix + "pool-free"
	// AnnotationPoolLargestNodeFree is the most free on one real node: the
	// largest request one member pod can be given.
	AnnotationPoolLargestNodeFree = Prefix + "pool-largest-node-free"
	// AnnotationPoolNodesByFree is how many real nodes have k free, as
	// "k:nodes" pairs separated by commas, largest k first, e.g. "8:1,4:3,0:12".
	AnnotationPoolNodesByFree = Prefix + "pool-nodes-by-free"
)
