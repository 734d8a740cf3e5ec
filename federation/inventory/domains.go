// SPDX-License-Identifier: Apache-2.0

package inventory

import "sort"

// Level is a topology level. Domains nest: a node lies in one NVLink domain
// (its clique, or the node itself on HGX-style nodes whose NVLink stops at
// the node), which lies in a rack, a block and a cluster.
type Level string

// The topology levels, tightest first.
const (
	LevelNode    Level = "node"
	LevelNVLink  Level = "nvlink"
	LevelRack    Level = "rack"
	LevelBlock   Level = "block"
	LevelCluster Level = "cluster"
)

// Levels lists the levels from the tightest to the loosest.
var Levels = []Level{LevelNode, LevelNVLink, LevelRack, LevelBlock, LevelCluster}

// Rank orders levels: node 0, nvlink 1 … cluster 4; -1 for an unknown level.
func (l Level) Rank() int {
	for i, x := range Levels {
		if x == l {
			return i
		}
	}
	return -1
}

// Valid reports whether l is one of Levels.
func (l Level) Valid() bool { return l.Rank() >= 0 }

// Domain summarises the whole GPUs of one topology domain.
type Domain struct {
	// Level is the domain's level.
	Level Level `json:"level"`
	// Name identifies the domain within the cluster (see Node.DomainOf).
	Name string `json:"name"`
	// Nodes is the number of GPU nodes in the domain.
	Nodes int `json:"nodes"`
	// GPUs is the allocatable whole GPUs on the domain's schedulable nodes.
	GPUs int `json:"gpus"`
	// Free is the free whole GPUs on the domain's schedulable nodes.
	Free int `json:"free"`
	// LargestNodeFree is the most free GPUs on one node of the domain.
	LargestNodeFree int `json:"largestNodeFree"`
}

// Domains returns the cluster's domains at a level, most free GPUs first
// (ties by name). At LevelCluster it is one domain named after the cluster.
func (c Cluster) Domains(l Level) []Domain {
	idx := map[string]int{}
	var out []Domain
	for i := range c.Nodes {
		n := &c.Nodes[i]
		name := n.DomainOf(l)
		if l == LevelCluster {
			name = c.Name
		}
		j, ok := idx[name]
		if !ok {
			j = len(out)
			idx[name] = j
			out = append(out, Domain{Level: l, Name: name})
		}
		d := &out[j]
		d.Nodes++
		if n.Schedulable() {
			d.GPUs += n.GPUs
		}
		f := n.FreeGPUs()
		d.Free += f
		d.LargestNodeFree = max(d.LargestNodeFree, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Free != out[j].Free {
			return out[i].Free > out[j].Free
		}
		return out[i].Name < out[j].Name
	})
	return out
}
