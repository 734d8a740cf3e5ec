// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"sort"
	"strconv"
	"strings"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// allocatable is the virtual node's allocatable count of its pool's
// resource, chosen so that `kubectl describe node` on the hub reads as it
// does for a real node: allocatable minus what the node's pods request (the
// "Allocated resources" it lists) is what is free in the pool. So it is the
// pool's free count (on Ready, uncordoned real nodes, whoever's pods use the
// rest) plus what Shoal's members on this node hold, never more than the
// capacity. It is a sum over real nodes: no one member can get more than
// the pool-largest-node-free annotation says.
func allocatable(p fedinv.Pool, held int) int {
	return min(p.Capacity, p.Free+max(0, held))
}

// poolAnnotations is the per-shape detail of the pool, in well-known
// annotations (apis/v1alpha1 AnnotationPool*).
func poolAnnotations(p fedinv.Pool) map[string]string {
	return map[string]string{
		v1alpha1.AnnotationPoolNodes:           strconv.Itoa(p.Nodes),
		v1alpha1.AnnotationPoolFree:            strconv.Itoa(p.Free),
		v1alpha1.AnnotationPoolLargestNodeFree: strconv.Itoa(p.LargestNodeFree),
		v1alpha1.AnnotationPoolNodesByFree:     nodesByFree(p.NodesByFree),
	}
}

// nodesByFree formats "k:nodes" pairs, largest k first ("" for no nodes).
func nodesByFree(m map[int]int) string {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ks)))
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, strconv.Itoa(k)+":"+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, ",")
}
