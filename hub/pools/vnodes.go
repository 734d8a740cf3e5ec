// SPDX-License-Identifier: Apache-2.0

package pools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// LabelPoolPrefix + <pool> = "true" is on every virtual node of the hub
// cluster that holds nodes of the GPU pool (docs/pools.md).
const LabelPoolPrefix = "pool.shoal.dev/"

// vnodePools says which pools each virtual node ("cluster/slug") holds
// nodes of: a virtual node is one GPU shape (inventory.Pool) of a cluster,
// so a pool holds it when its cluster matches and one of the cluster's
// nodes of that shape's product is in the pool.
func vnodePools(ps []*v1alpha1.GPUPool, invs []inventory.Cluster, labels map[string]map[string]string) map[string][]string {
	out := map[string][]string{}
	for _, p := range ps {
		m, err := NewMatcher(p)
		if err != nil {
			continue
		}
		for ci := range invs {
			cl := &invs[ci]
			if !m.Cluster(cl.Name, labels[cl.Name]) {
				continue
			}
			for _, shape := range cl.Pools() {
				for ni := range cl.Nodes {
					n := &cl.Nodes[ni]
					if n.Product == shape.Product && m.Node(n) {
						k := cl.Name + "/" + shape.Name
						out[k] = append(out[k], p.Name)
						break
					}
				}
			}
		}
	}
	return out
}

// labelVirtualNodes sets each virtual node's pool labels to the pools it
// holds, by merge patches of the labels alone (the agent's virtual kubelet
// owns the rest of the node).
func labelVirtualNodes(ctx context.Context, cs kubernetes.Interface, want map[string][]string) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelVirtual + "=true"})
	if err != nil {
		return err
	}
	var all []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := poolLabelPatch(n, want[n.Labels[v1alpha1.LabelCluster]+"/"+n.Labels[v1alpha1.LabelPool]])
		if patch == nil {
			continue
		}
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			all = append(all, fmt.Errorf("label virtual node %s: %w", n.Name, err))
		}
	}
	return errors.Join(all...)
}

// poolLabelPatch is the labels merge patch that makes n's pool labels
// pools (nil values remove), or nil when they already are.
func poolLabelPatch(n *corev1.Node, pools []string) map[string]any {
	patch := map[string]any{}
	for k := range n.Labels {
		if name, ok := strings.CutPrefix(k, LabelPoolPrefix); ok && !slices.Contains(pools, name) {
			patch[k] = nil
		}
	}
	for _, p := range pools {
		if n.Labels[LabelPoolPrefix+p] != "true" {
			patch[LabelPoolPrefix+p] = "true"
		}
	}
	if len(patch) == 0 {
		return nil
	}
	return patch
}
