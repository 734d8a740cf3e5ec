// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// Internal level indexes: domains nest node ⊂ nvlink ⊂ rack ⊂ block ⊂ cluster.
const (
	lvNode = iota
	lvNVLink
	lvRack
	lvBlock
	lvCluster
	numLevels
	lvFleet = numLevels // several clusters
)

var levelNames = [numLevels]inventory.Level{
	inventory.LevelNode, inventory.LevelNVLink, inventory.LevelRack, inventory.LevelBlock, inventory.LevelCluster,
}

// levelIndex maps a level name to its index; ok is false for "" or unknown.
func levelIndex(l inventory.Level) (int, bool) {
	for i, n := range levelNames {
		if n == l {
			return i, true
		}
	}
	return 0, false
}

// nodeKey names a node of the fleet: its cluster and its name there.
type nodeKey struct{ cluster, node string }

// nodeAt is the index of a cluster's node.
func (s *Snapshot) nodeAt(cluster, name string) (int32, bool) {
	i, ok := s.nodeIndex[nodeKey{cluster, name}]
	return i, ok
}

// node is one GPU node in the snapshot's flat array. It holds no pointer
// (its name is Snapshot.names', its MIG slices and shares Snapshot.migs'),
// so that a build copies 100,000 of them as plain memory.
type node struct {
	cluster     int32
	class       int32
	dom         [numLevels]int32 // domain index at each level; dom[lvNode] is the node's own index
	gpus        int32
	used        int32
	free        int32 // gpus-used when schedulable, else 0
	schedulable bool
}

type migCount struct{ alloc, used int32 }

func (c *migCount) free() int32 { return max(0, c.alloc-c.used) }

// domain is a contiguous range of nodes (and of child domains); its
// free GPUs are Snapshot.dfree's. Domains are the layout's: snapshots of
// one layout share them (Builder), so nothing changes them after it.
type domain struct {
	name     string
	cluster  int32
	lo, hi   int32 // node range
	clo, chi int32 // child domain range one level down (level > 0)
	gpus     int32
}

// class groups nodes a gang's filters cannot tell apart: same cluster,
// product, taints, DRA GPUs, sharing and node pool.
type class struct {
	cluster   int32
	product   string
	taints    []corev1.Taint
	devices   *inventory.DRADevices // the nodes' DRA GPUs (nil: none)
	sharing   string                // the nodes' sharing strategy of requestable shares ("" if none)
	nodePool  string                // the nodes' node pool ("" if none)
	clique    string                // the nodes' NVLink clique where their cluster serves ComputeDomains ("" otherwise)
	quotaKeys []string              // GPU classes the product counts in (quota.go)
}

type clusterInfo struct {
	name           string
	labels         map[string]string
	computeDomains bool                // serves NVIDIA ComputeDomains
	ranges         [numLevels][2]int32 // domain index range per level
}

// Snapshot is the fleet as one scheduling decision sees it. Place and
// Schedule update it as they assume placements; it is not safe for
// concurrent use. Build a fresh one per cycle, or keep one and apply
// Assume/Release as gangs start and end.
type Snapshot struct {
	clusters  []clusterInfo
	nodes     []node
	nodeNames []string                       // [i]: node i's name (the layout's)
	migs      map[int32]map[string]*migCount // by node: its MIG slices, and shares (nvidia.com/gpu.shared), by resource
	levels    [numLevels][]domain
	dfree     [numLevels][]int32 // [l][d]: the free GPUs of domain d of level l
	classes   []class
	nodeIndex map[nodeKey]int32 // (cluster, node) → index
	pos       [][]int32         // [cluster][k]: the index of the cluster's k-th inventory node
	// uniqueNames: every node has its own (cluster, node) key in nodeIndex.
	uniqueNames bool
	allocs      allocSet
	onNode      [][]*allocation        // per node: the allocations in allocs with GPUs on it (releaseTimes, drainTime)
	runSums     map[runKey]int         // GPUs the allocations hold by queue, MIG resource and node class
	offAllocs   map[string]*allocation // allocations with GPUs on nodes the snapshot does not know
	noGPUs      map[string]int         // allocations holding no GPU, by queue (QueueUsage lists their queues)
	trivial     [numLevels]bool        // level has exactly the domains of the level below
	maxNode     int32                  // most GPUs on one node
	holders     []int32                // per node: the reservation holding it, -1 for none (nil: no reservations)
	holdStart   []int64                // per reservation: UnixNano its held nodes are expected to be free
	// version counts the changes to what a placement and its explanation
	// read: free GPUs and slices, schedulable flags, reservation marks and
	// times (see cycle.waitMemo). A change that is undone still counts.
	version uint64
	cycles  uint64 // scheduling cycles run on the snapshot
	// bulk says usage changes only change the nodes' usage (addRunning),
	// not their free GPUs, domains or indexes: resum follows.
	bulk    bool
	slab    bulkSlab
	scratch scratch
	names   [numLevels]map[string]int32 // domain name → index, built on demand
	index   freeIndex
	dindex  domainIndex
	maxGPUs [numLevels]int32 // GPUs of the largest domain per level
	// productGPUs is the allocatable GPUs by product, the layout's (node
	// GPUs are): capacityByProduct.
	productGPUs map[string]int
	// cdHeld counts, per "<cluster index>/<clique>", the allocations of
	// compute-domain gangs holding nodes of that clique (computedomain.go).
	cdHeld map[string]int
	// touched lists, once each (isTouched marks them), the nodes whose
	// usage, slices or schedulable flag changed since a Builder built the
	// snapshot, which the next build counts again (recount); isTouched is
	// nil on a snapshot no Builder keeps.
	touched   []int32
	isTouched []bool
}

// allocation is a gang holding GPUs in the snapshot. Its Allocation is
// shared, never changed (Checkpointed replaces it): NewSnapshot's are its
// own copies, a Builder's the caller's.
type allocation struct {
	*Allocation
	nodes   []int32
	gpus    []int32 // GPUs (or slices) booked on each of nodes
	mig     string
	offGPUs int // GPUs (or slices) on nodes the snapshot does not know (a cluster not Ready)
	// byClass sums gpus by node class, in order of first appearance, so a
	// cycle charges queues without visiting every node of every gang.
	byClass []classGPUs
	// placedIn is the Snapshot.cycles of the scheduling cycle that placed
	// the gang (0: booked by Assume or NewSnapshot).
	placedIn uint64
}

// runKey sums the running gangs' GPUs a cycle charges to one queue.
type runKey struct {
	queue, mig string
	class      int32
}

// classGPUs is GPUs (or slices) booked on nodes of one class.
type classGPUs struct {
	class int32
	gpus  int32
}

// NewSnapshot lays out the clusters' inventories and subtracts the running
// allocations not already counted in them. Allocations on unknown nodes are
// kept (they still matter for preemption and fair share) but book nothing.
func NewSnapshot(clusters []inventory.Cluster, running []Allocation) *Snapshot {
	s, _ := newLayout(sortedClusters(clusters))
	s.addRunning(pointers(slices.Clone(running)))
	return s
}

// pointers is the address of each allocation of as.
func pointers(as []Allocation) []*Allocation {
	out := make([]*Allocation, len(as))
	for i := range as {
		out[i] = &as[i]
	}
	return out
}

// sortedClusters is a copy of clusters sorted by name.
func sortedClusters(clusters []inventory.Cluster) []inventory.Cluster {
	cs := append([]inventory.Cluster(nil), clusters...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

// addRunning books the running allocations (NewSnapshot) in bulk: their
// usage is added to the nodes first, then the free GPUs of the nodes and
// domains and the indexes are computed once (resum), not moved allocation
// by allocation. The snapshot is fresh: laid out, with no allocation yet.
func (s *Snapshot) addRunning(running []*Allocation) {
	s.beginBulk(running)
	for _, a := range running {
		s.add(a, !a.Counted, nil)
	}
	s.endBulk()
	s.resum(nil)
}

// beginBulk readies a fresh snapshot to add the running allocations in
// bulk (add): their structs and node lists from one slab, their usage
// added to the nodes' only, their per-node lists made by endBulk.
func (s *Snapshot) beginBulk(running []*Allocation) {
	s.bulk = true
	ints := 0
	for _, a := range running {
		ints += 2 * len(a.Assignments)
	}
	s.slab = bulkSlab{allocs: make([]allocation, len(running)), ints: make([]int32, ints),
		added: make([]*allocation, 0, len(running))}
	s.allocs = newAllocSet(len(running))
}

// endBulk lists the allocations added since beginBulk on their nodes.
func (s *Snapshot) endBulk() {
	s.listAll()
	s.bulk = false
}

// resum computes every node's free GPUs from its usage and, from them,
// the domains' free GPUs, the free index and the domain index.
func (s *Snapshot) resum(spare *Snapshot) {
	for i := range s.nodes {
		s.nodes[i].free = s.nodes[i].freeNow()
	}
	for l := range numLevels {
		var free []int32
		if spare != nil && len(spare.dfree[l]) == len(s.levels[l]) {
			free = spare.dfree[l]
			clear(free)
		} else {
			free = make([]int32, len(s.levels[l]))
		}
		for i := range s.nodes {
			n := &s.nodes[i]
			free[n.dom[l]] += n.free
		}
		s.dfree[l] = free
	}
	var si *freeIndex
	var sd *domainIndex
	if spare != nil {
		si, sd = &spare.index, &spare.dindex
	}
	s.buildFreeIndex(si)
	s.buildDomainIndex(sd)
}

// newLayout lays out clusters, sorted by name, without allocations and
// without the indexes (addRunning builds them). pos maps each cluster's
// k-th inventory node to its index in s.nodes.
func newLayout(cs []inventory.Cluster) (s *Snapshot, pos [][]int32) {
	s = &Snapshot{allocs: newAllocSet(0),
		runSums: map[runKey]int{}, offAllocs: map[string]*allocation{}, noGPUs: map[string]int{}, cdHeld: map[string]int{}}
	type keyed struct {
		n    *inventory.Node
		c, k int32
		keys [numLevels]string
	}
	var all []keyed
	pos = make([][]int32, len(cs))
	for ci := range cs {
		s.clusters = append(s.clusters, clusterInfo{name: cs[ci].Name, labels: cs[ci].Labels,
			computeDomains: cs[ci].ComputeDomains})
		pos[ci] = make([]int32, len(cs[ci].Nodes))
		for ni := range cs[ci].Nodes {
			n := &cs[ci].Nodes[ni]
			all = append(all, keyed{n: n, c: int32(ci), k: int32(ni), keys: domainKeys(n)})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := &all[i], &all[j]
		if a.c != b.c {
			return a.c < b.c
		}
		for l := lvBlock; l >= lvNode; l-- {
			if a.keys[l] != b.keys[l] {
				return a.keys[l] < b.keys[l]
			}
		}
		return false
	})
	classIdx := map[string]int32{}
	s.nodes = make([]node, len(all))
	s.nodeNames = make([]string, len(all))
	s.onNode = make([][]*allocation, len(all))
	s.nodeIndex = make(map[nodeKey]int32, len(all))
	for i, k := range all {
		s.nodes[i] = s.newNode(int32(i), k.n, k.c, s.clusters[k.c].computeDomains, classIdx)
		s.nodeNames[i] = k.n.Name
		s.nodeIndex[nodeKey{cs[k.c].Name, k.n.Name}] = int32(i)
		pos[k.c][k.k] = int32(i)
	}
	s.buildDomains(func(i int, l int) string { return all[i].keys[l] })
	for l := range numLevels {
		for _, d := range s.levels[l] {
			s.maxGPUs[l] = max(s.maxGPUs[l], d.gpus)
		}
	}
	s.uniqueNames = len(s.nodeIndex) == len(s.nodes)
	s.pos = pos
	s.productGPUs = map[string]int{}
	for i := range s.nodes {
		s.productGPUs[s.classes[s.nodes[i].class].product] += int(s.nodes[i].gpus)
	}
	return s, pos
}

// domainKeys returns the key of a node's domain at each level. A level the
// node has no label for inherits the domain below it (a node without a rack
// label is a rack of its own; a rack without a block label a block of its
// own), so domains always nest and no topology is invented.
func domainKeys(n *inventory.Node) [numLevels]string {
	var k [numLevels]string
	k[lvNode] = n.Name
	k[lvNVLink] = "node:" + n.Name
	if n.Clique != "" {
		k[lvNVLink] = "clique:" + n.Clique
	}
	k[lvRack] = k[lvNVLink]
	if n.Rack != "" {
		k[lvRack] = "rack:" + n.Rack
	}
	k[lvBlock] = k[lvRack]
	if n.Block != "" {
		k[lvBlock] = "block:" + n.Block
	}
	return k
}

func (s *Snapshot) newNode(i int32, n *inventory.Node, c int32, computeDomains bool, classIdx map[string]int32) node {
	sharing := ""
	if n.Shared.Requestable() {
		sharing = n.Shared.Strategy
	}
	sig := fmt.Sprintf("%d\x00%s\x00%s\x00%s\x00%s", c, n.Product, taintsKey(n.Taints), sharing, n.NodePool)
	if n.DRADevices != nil {
		sig += "\x00" + n.DRADevices.Key()
	}
	clique := ""
	if computeDomains && n.Clique != "" { // a clique is a class of its own only where it can hold a domain
		clique = n.Clique
		sig += "\x00clique:" + clique
	}
	ci, ok := classIdx[sig]
	if !ok {
		ci = int32(len(s.classes))
		classIdx[sig] = ci
		s.classes = append(s.classes, class{cluster: c, product: n.Product, taints: n.Taints, devices: n.DRADevices, sharing: sharing,
			nodePool: n.NodePool, clique: clique, quotaKeys: v1alpha1.GPUClassesOfProduct(n.Product)})
	}
	out := node{cluster: c, class: ci, gpus: int32(n.GPUs)}
	s.setCounts(i, &out, n)
	s.maxNode = max(s.maxNode, out.gpus)
	return out
}

// setCounts sets what of node i (out) changes without changing the
// snapshot's layout (Builder): its usage, whether it is schedulable and
// its MIG slices and shares, and so its free GPUs.
func (s *Snapshot) setCounts(i int32, out *node, n *inventory.Node) {
	out.used, out.schedulable = int32(n.UsedGPUs), n.Schedulable()
	if len(n.MIG) > 0 || n.Shared.Requestable() {
		m := make(map[string]*migCount, len(n.MIG)+1)
		for r, c := range n.MIG {
			m[r] = &migCount{alloc: int32(c.Allocatable), used: int32(c.Used)}
		}
		if sh := n.Shared; sh.Requestable() {
			m[inventory.ResourceGPUShared] = &migCount{alloc: int32(sh.Allocatable), used: int32(sh.Used)}
		}
		if s.migs == nil {
			s.migs = map[int32]map[string]*migCount{}
		}
		s.migs[i] = m
	} else if s.migs != nil {
		delete(s.migs, i) // a Builder's kept counts (recount)
	}
	out.free = out.freeNow()
}

// slice is node i's count of MIG slices or shares of resource res (nil:
// it has none).
func (s *Snapshot) slice(i int32, res string) *migCount {
	return s.migs[i][res]
}

// taintsKey is the taints as toleration matching reads them (not
// TimeAdded, which %v would print as a pointer).
func taintsKey(ts []corev1.Taint) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Key + "=" + t.Value + ":" + string(t.Effect) + "\x00")
	}
	return b.String()
}

func (n *node) freeNow() int32 {
	if !n.schedulable {
		return 0
	}
	return max(0, n.gpus-n.used)
}
