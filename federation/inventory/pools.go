// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"sort"
	"strconv"
	"strings"
)

// Pool is the capacity of one GPU shape in a cluster: one GPU product, one
// MIG profile of a product, or the shares of a product's shared GPUs. Each pool is published as one virtual node named
// shoal-<cluster>-<pool>.
type Pool struct {
	// Name is a DNS-label-safe slug such as h100-80gb or a100-80gb-mig-1g-10gb.
	Name string `json:"name"`
	// Product is the GPU product the pool's nodes carry.
	Product string `json:"product,omitempty"`
	// Resource is the extended resource pods request: nvidia.com/gpu, a MIG
	// resource or nvidia.com/gpu.shared.
	Resource string `json:"resource"`
	// MemoryMiB is the GPU memory of the product (the largest seen).
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// Nodes is how many nodes contribute to the pool.
	Nodes int `json:"nodes"`
	// Capacity is the allocatable count summed over all the pool's nodes.
	Capacity int `json:"capacity"`
	// Allocatable is the allocatable count on schedulable (Ready, uncordoned) nodes.
	Allocatable int `json:"allocatable"`
	// Free is what is neither used nor on an unschedulable node.
	Free int `json:"free"`
	// LargestNodeFree is the most a single pod can get on one node.
	LargestNodeFree int `json:"largestNodeFree"`
	// NodesByFree maps a free count k to the number of the pool's nodes with
	// exactly k free (unschedulable nodes count as 0 free).
	NodesByFree map[int]int `json:"nodesByFree,omitempty"`
}

// maxPoolName keeps shoal-<cluster>-<pool> inside a 63-character DNS label
// for cluster names of up to 20 characters.
const maxPoolName = 36

// Pools returns the cluster's pools sorted by name: one per GPU product with
// whole GPUs, one per (product, MIG profile), one per product with
// requestable shared GPUs (h100-80gb-shared).
func (c Cluster) Pools() []Pool {
	byKey := map[[2]string]*Pool{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.GPUs > 0 || n.CapacityGPUs > 0 {
			p := pool(byKey, n.Product, ResourceGPU)
			add(p, n, n.GPUs, n.FreeGPUs())
		}
		for _, r := range sortedKeys(n.MIG) {
			p := pool(byKey, n.Product, r)
			add(p, n, n.MIG[r].Allocatable, n.FreeMIG(r))
		}
		if n.Shared.Requestable() {
			p := pool(byKey, n.Product, ResourceGPUShared)
			add(p, n, n.Shared.Allocatable, n.FreeShared())
		}
	}
	out := make([]Pool, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Product+out[i].Resource < out[j].Product+out[j].Resource
	})
	dedupeNames(out)
	return out
}

func pool(byKey map[[2]string]*Pool, product, res string) *Pool {
	k := [2]string{product, res}
	if p, ok := byKey[k]; ok {
		return p
	}
	p := &Pool{Name: PoolName(product, res), Product: product, Resource: res}
	byKey[k] = p
	return p
}

func add(p *Pool, n *Node, alloc, free int) {
	p.Nodes++
	p.Capacity += alloc
	if n.Schedulable() {
		p.Allocatable += alloc
	}
	p.Free += free
	p.LargestNodeFree = max(p.LargestNodeFree, free)
	if p.NodesByFree == nil {
		p.NodesByFree = map[int]int{}
	}
	p.NodesByFree[free]++
	p.MemoryMiB = max(p.MemoryMiB, n.MemoryMiB)
}

// dedupeNames makes names unique after truncation or slug collisions by
// suffixing -2, -3… in sorted order.
func dedupeNames(pools []Pool) {
	seen := map[string]int{}
	for i := range pools {
		base := pools[i].Name
		seen[base]++
		if k := seen[base]; k > 1 {
			suffix := "-" + strconv.Itoa(k)
			pools[i].Name = strings.TrimRight(truncate(base, maxPoolName-len(suffix)), "-") + suffix
		}
	}
}

// noise are product-name tokens that do not tell pools apart.
var noise = map[string]bool{
	"nvidia": true, "tesla": true, "hbm": true, "hbm2": true, "hbm2e": true, "hbm3": true,
	"hbm3e": true, "sxm": true, "sxm2": true, "sxm4": true, "sxm5": true, "pcie": true,
}

// PoolName returns the DNS-label-safe slug of a product and resource, e.g.
// ("NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu") → "h100-80gb" and
// ("NVIDIA-A100-SXM4-80GB", "nvidia.com/mig-1g.10gb") → "a100-80gb-mig-1g-10gb"
// and ("NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.shared") → "h100-80gb-shared".
func PoolName(product, res string) string {
	var parts []string
	for _, t := range tokens(product) {
		if !noise[t] {
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		parts = []string{"gpu"}
	}
	if strings.HasPrefix(res, ResourceMIGPrefix) {
		parts = append(parts, "mig")
		parts = append(parts, tokens(strings.TrimPrefix(res, ResourceMIGPrefix))...)
	}
	if res == ResourceGPUShared {
		parts = append(parts, "shared")
	}
	return strings.TrimRight(truncate(strings.Join(parts, "-"), maxPoolName), "-")
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
