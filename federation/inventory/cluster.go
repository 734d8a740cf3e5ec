// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"encoding/binary"
	"hash/fnv"
	"reflect"
	"sort"
	"strconv"
)

// Cluster is the GPU inventory of one workload cluster. The agent sends it to
// the hub as JSON whenever its content changes.
type Cluster struct {
	// Name is the cluster's name in the federation.
	Name string `json:"name"`
	// Generation increases each time the agent sends a changed inventory.
	Generation int64 `json:"generation"`
	// Labels are the cluster's labels (region, provider…), used by cluster selectors.
	Labels map[string]string `json:"labels,omitempty"`
	// Nodes are the cluster's GPU nodes, sorted by name.
	Nodes []Node `json:"nodes"`
	// Topology is the topology map the agent read the nodes' NVLink
	// domain, rack, block and zone with (nil from agents before it).
	Topology *Topology `json:"topology,omitempty"`
	// ComputeDomains says the cluster serves NVIDIA's ComputeDomains
	// (computedomains in resource.nvidia.com/v1beta1), detected by the
	// agent: only such clusters take compute-domain gangs.
	ComputeDomains bool `json:"computeDomains,omitempty"`
	// Gangs counts the member pods of each Shoal gang bound to a node of
	// the cluster and not terminated, by GangKey: the members whose GPUs
	// the nodes' UsedGPUs include. The hub's scheduler stops subtracting a
	// gang's reservation from the nodes once the inventory holds every
	// member of it (hub/scheduler, "Counted"). An empty map when the
	// cluster runs none; nil from agents before it.
	Gangs map[string]int32 `json:"gangs"`
}

// GangKey is the key of a gang's epoch in Cluster.Gangs.
func GangKey(job string, epoch int64) string { return job + "/" + strconv.FormatInt(epoch, 10) }

// Equal reports whether two inventories have the same content. Generation is
// ignored: it numbers reports, it is not content.
func (c Cluster) Equal(o Cluster) bool {
	c.Generation, o.Generation = 0, 0
	return reflect.DeepEqual(normalize(c), normalize(o))
}

// normalize makes empty and nil maps and slices compare equal.
func normalize(c Cluster) Cluster {
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	if len(c.Nodes) == 0 {
		c.Nodes = nil
	}
	nodes := make([]Node, len(c.Nodes))
	for i, n := range c.Nodes {
		if len(n.MIG) == 0 {
			n.MIG = nil
		}
		if len(n.Taints) == 0 {
			n.Taints = nil
		}
		nodes[i] = n
	}
	if c.Nodes != nil {
		c.Nodes = nodes
	}
	return c
}

// Hash returns a cheap 64-bit content hash (FNV-1a) that ignores Generation,
// so an agent can tell whether its inventory changed without keeping a copy.
func (c Cluster) Hash() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	str := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	num := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		_, _ = h.Write(buf[:])
	}
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	str(c.Name)
	for _, k := range sortedKeys(c.Labels) {
		str(k)
		str(c.Labels[k])
	}
	if t := c.Topology; t != nil {
		str(t.Source)
		str(t.Preset)
		str(t.Keys.NVLink)
		str(t.Keys.Rack)
		str(t.Keys.Block)
		str(t.Keys.Zone)
		str(t.Message)
	}
	flag(c.ComputeDomains)
	num(int64(len(c.Gangs)))
	for _, k := range sortedKeys(c.Gangs) {
		str(k)
		num(int64(c.Gangs[k]))
	}
	num(int64(len(c.Nodes)))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		str(n.Name)
		str(n.Product)
		num(n.MemoryMiB)
		num(int64(n.CapacityGPUs))
		num(int64(n.GPUs))
		num(int64(n.UsedGPUs))
		num(int64(n.DRAGPUs))
		str(n.DRAClass)
		for _, r := range sortedKeys(n.MIG) {
			str(r)
			num(int64(n.MIG[r].Allocatable))
			num(int64(n.MIG[r].Used))
		}
		for _, r := range sortedKeys(n.DRAMIG) {
			str(r)
			num(int64(n.DRAMIG[r]))
			str(n.DRAMIGClasses[r])
		}
		str(n.Clique)
		str(n.Rack)
		str(n.Block)
		str(n.Zone)
		flag(n.Ready)
		flag(n.Unschedulable)
		for _, t := range n.Taints {
			str(t.Key)
			str(t.Value)
			str(string(t.Effect))
		}
	}
	return h.Sum64()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FreeGPUs returns the free whole GPUs on the cluster's schedulable nodes.
func (c Cluster) FreeGPUs() int {
	free := 0
	for i := range c.Nodes {
		free += c.Nodes[i].FreeGPUs()
	}
	return free
}
