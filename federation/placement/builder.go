// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// Builder builds a scheduling cycle's Snapshot from the clusters'
// inventories and the running gangs, keeping from build to build what
// changes little between cycles:
//
//   - the layout: the nodes' order, domains, classes and names, which at a
//     fleet of 100,000 nodes cost most of a fresh NewSnapshot and change
//     only when a node or cluster comes or goes or a node's topology,
//     product, taints, pool or allocatable GPUs change;
//   - the running gangs booked on it (running): their allocations, the
//     per-node lists, the per-queue sums and the GPUs they book on each
//     node, changed by the gangs that started, ended or changed since the
//     last build instead of booking 20,000 gangs again every cycle.
//
// A build reads every node's counts (usage, schedulable, MIG slices and
// shares) into the last build's arrays, adds the kept bookings, changes
// the domains' sums by the nodes whose free GPUs or schedulable flag
// changed since (recount) and lists the buckets of the indexes afresh, so
// the Snapshot it returns is the one NewSnapshot would
// build from the same arguments, field for field (but the order of the
// per-node lists of gangs, which no reader depends on). The zero Builder
// is ready; it is not safe for concurrent use.
type Builder struct {
	layout *Snapshot           // the last build's layout (no allocations)
	invs   []inventory.Cluster // the inventories it was laid out or last built from, sorted
	pos    [][]int32           // [cluster][k]: the snapshot node of the cluster's k-th inventory node
	at     []nodeRef           // [node]: its cluster and place in the cluster's inventory (pos reversed)
	run    *running            // the running gangs booked on the layout (nil: none kept)
	// last is the last build's snapshot when built on the current layout:
	// the next build fills its arrays again instead of allocating
	// megabytes anew (a snapshot is valid until the next build).
	last *Snapshot
	gen  uint64 // builds
	// Layouts counts the builds that laid the fleet out afresh, and
	// LayoutReason says why the last did (what changed first).
	Layouts      int
	LayoutReason string
}

// Snapshot is NewSnapshot(clusters, running), built on the last build's
// layout where the clusters' layout did not change, and on the last
// build's bookings changed by the gangs that differ. The inventories must
// not be changed while the Builder holds them (until the next build); the
// Snapshot it returns is valid until the next build (it shares the kept
// allocations, which the next build changes). The snapshot reads the
// allocations themselves, not copies: between builds the caller may
// change an allocation's Started, LastCheckpoint, CheckpointInterval and
// Counted in place, and must give any other change as another Allocation.
func (b *Builder) Snapshot(clusters []inventory.Cluster, running []*Allocation) *Snapshot {
	cs := sortedClusters(clusters)
	why := "first build"
	if b.layout != nil {
		why = layoutChange(b.invs, cs)
	}
	if why != "" {
		b.layout, b.pos = newLayout(cs)
		b.at = reversePos(b.pos, len(b.layout.nodes))
		b.Layouts++
		b.LayoutReason = why
		b.run, b.last = nil, nil
	}
	same := sameReports(b.invs, cs, b.last != nil)
	b.invs = cs
	b.gen++
	if !b.book(running) {
		// A gang twice in running: booked twice, as NewSnapshot does, and
		// nothing kept.
		b.run, b.last = nil, nil
		s := b.layout.withCounts(cs, b.pos, nil)
		s.onNode = make([][]*allocation, len(s.nodes))
		s.addRunning(running)
		return s
	}
	return b.count(cs, same)
}

// RunningChange is what changed in the running gangs since a Builder's
// last build: the gangs new since, or whose booking or Counted changed
// (Set, each gang once), and the IDs of those that ended (Gone). A gang
// whose only changes are those Snapshot lets a caller make in place
// (Started, LastCheckpoint, CheckpointInterval) need not be in Set.
type RunningChange struct {
	Set  []*Allocation
	Gone []string
}

// SnapshotChanged is Snapshot(clusters, running) where running is the
// last build's running gangs changed by ch (Gone removed, then Set added
// or replacing the gang of its ID): its work grows with the gangs that
// changed, where Snapshot visits every running gang (at 65,000 gangs a
// few milliseconds a cycle; docs/scale.md, session 20). It reports false,
// building nothing and changing nothing, when the Builder keeps no
// running gangs to change (no build yet, or the last one kept none) or
// the clusters' layout changed: the caller then builds with Snapshot and
// every running gang.
func (b *Builder) SnapshotChanged(clusters []inventory.Cluster, ch RunningChange) (*Snapshot, bool) {
	if b.run == nil || b.last == nil {
		return nil, false
	}
	cs := sortedClusters(clusters)
	if layoutChange(b.invs, cs) != "" {
		return nil, false
	}
	same := sameReports(b.invs, cs, true)
	b.invs = cs
	b.gen++
	r := b.run
	for _, id := range ch.Gone {
		if k := r.byGang[id]; k != nil {
			r.remove(k)
		}
	}
	for _, a := range ch.Set {
		r.rebook(r.byGang[a.Gang.ID], a, b.gen)
	}
	return b.count(cs, same), true
}

// count is the build's snapshot of the inventories cs (same as for
// recount) with the kept running gangs, on the last build's arrays where
// there is one.
func (b *Builder) count(cs []inventory.Cluster, same []bool) *Snapshot {
	spare := b.last
	if spare != nil {
		b.last = b.layout.recount(cs, b.pos, b.at, same, b.run, spare)
	} else {
		b.last = b.layout.withCounts(cs, b.pos, nil).withRunning(b.run, nil)
		b.last.isTouched = make([]bool, len(b.last.nodes))
	}
	b.run.clearChanged()
	return b.last
}

// nodeRef is where a snapshot node lies in the inventories: cluster c's
// k-th node.
type nodeRef struct{ c, k int32 }

// reversePos is each of n snapshot nodes' place in the inventories laid
// out by pos.
func reversePos(pos [][]int32, n int) []nodeRef {
	at := make([]nodeRef, n)
	for c, ks := range pos {
		for k, i := range ks {
			at[i] = nodeRef{int32(c), int32(k)}
		}
	}
	return at
}

// sameReports says, per cluster of cs (laid out as last), whether its
// report is the one the last build read (the same nodes, not changed
// while the Builder held them): its nodes need no counting again but those
// a cycle or a booking changed. All false when nothing was built on the
// layout (kept false).
func sameReports(last, cs []inventory.Cluster, kept bool) []bool {
	same := make([]bool, len(cs))
	if !kept || len(last) != len(cs) {
		return same
	}
	for ci := range cs {
		a, b := last[ci].Nodes, cs[ci].Nodes
		same[ci] = len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
	}
	return same
}

// book brings the kept bookings to running: it books the gangs that are
// new or whose booking changed (nodes, members, GPUs per member, queue,
// slices, compute domain, Counted), unbooks the ended ones, and refreshes
// the rest's allocations (start and checkpoint times). It returns false,
// keeping nothing, when running names a gang twice.
func (b *Builder) book(running []*Allocation) bool {
	if b.run == nil {
		b.run = newRunning(b.layout)
		return b.run.bulk(running, b.gen)
	}
	r := b.run
	for _, a := range running {
		k := a.kept // the same Allocation as a build before: no lookup
		if k == nil || k.run != r || k.gone || k.al.Allocation != a {
			k = r.byGang[a.Gang.ID]
		}
		if k != nil && k.seen == b.gen {
			return false
		}
		if k != nil && k.al.Allocation == a && a.Counted == k.counted {
			// The same Allocation as the last build: only its times may
			// have changed in place (Snapshot's contract), and Counted.
			k.seen = b.gen
			continue
		}
		r.rebook(k, a, b.gen)
	}
	if len(r.byGang) > len(running) {
		for _, k := range r.byGang {
			if k.seen != b.gen {
				r.remove(k)
			}
		}
	}
	return true
}

// rebook books a as its gang (kept as k; nil: not kept) at build gen:
// on k's booking when a books the same, else booked afresh.
func (r *running) rebook(k *kept, a *Allocation, gen uint64) {
	if k != nil && k.sameBooking(a) {
		k.al.Allocation, k.seen, a.kept = a, gen, k
		return
	}
	if k != nil {
		r.remove(k)
	}
	r.add(a, gen)
}

// running is the running gangs booked on a layout, kept from build to
// build: s shares the layout's nodes (read, never changed) and holds the
// allocations, their per-node lists (changed copy-on-write: a build's
// snapshot shares them), their per-queue sums and held cliques; booked and
// bookedMig are the GPUs and slices the uncounted gangs book on each node,
// which a build adds to the reported usage.
type running struct {
	s         *Snapshot
	byGang    map[string]*kept
	booked    []int32
	bookedMig map[int32]map[string]int32
	uses      uint64 // the usage changes booking made (Snapshot.version of a fresh build)
	// changed lists, once each (isChanged marks them), the nodes whose
	// bookings changed since the last build (recount counts them again).
	changed   []int32
	isChanged []bool
	// listed lists, once each (isListed marks them), the nodes whose
	// lists of gangs (s.onNode) changed since the last build: a build
	// copies only those into the last build's array (takeRunning).
	listed   []int32
	isListed []bool
}

// kept is a running gang as booked: its allocation, and what its booking
// was derived from (a copy of its assignments, each one's node and GPUs),
// to tell whether a later report of the gang books the same.
type kept struct {
	al          *allocation
	assignments []Assignment
	at          []int32 // each assignment's node (-1: not in the layout)
	gpus        []int   // each assignment's GPUs (or slices)
	queue, mig  string
	cd, counted bool
	seen        uint64 // the build that last had the gang (Builder.gen)
	// run holds it; gone says it was removed (an Allocation that still
	// points to it is looked up by name).
	run  *running
	gone bool
}

func newRunning(layout *Snapshot) *running {
	s := layout.onLayout()
	s.nodes, s.onNode = layout.nodes, make([][]*allocation, len(layout.nodes))
	return &running{s: s, byGang: map[string]*kept{}, booked: make([]int32, len(layout.nodes)),
		bookedMig: map[int32]map[string]int32{}, isChanged: make([]bool, len(layout.nodes)),
		isListed: make([]bool, len(layout.nodes))}
}

// clearChanged forgets the nodes whose bookings changed (a build read
// them).
func (r *running) clearChanged() {
	if r == nil {
		return
	}
	for _, i := range r.changed {
		r.isChanged[i] = false
	}
	r.changed = r.changed[:0]
	for _, i := range r.listed {
		r.isListed[i] = false
	}
	r.listed = r.listed[:0]
}

// markListed records that al's nodes' lists of gangs changed.
func (r *running) markListed(al *allocation) {
	for _, i := range al.nodes {
		if !r.isListed[i] {
			r.isListed[i] = true
			r.listed = append(r.listed, i)
		}
	}
}

// bulk books every gang of running on a fresh running, as addRunning does
// (one slab, listed at once); false when a gang is named twice.
func (r *running) bulk(running []*Allocation, gen uint64) bool {
	r.s.beginBulk(running)
	r.byGang = make(map[string]*kept, len(running))
	for _, a := range running {
		if r.byGang[a.Gang.ID] != nil {
			return false
		}
		r.add(a, gen)
	}
	r.s.endBulk()
	return true
}

// add books a gang not kept.
func (r *running) add(a *Allocation, gen uint64) {
	k := &kept{assignments: slices.Clone(a.Assignments), at: make([]int32, len(a.Assignments)),
		gpus: make([]int, len(a.Assignments)), queue: a.Gang.Queue, mig: a.Gang.sliceResource(),
		cd: a.Gang.ComputeDomain, counted: a.Counted, seen: gen, run: r}
	for j, as := range a.Assignments {
		i, ok := r.s.nodeAt(as.Cluster, as.Node)
		if !ok {
			i = -1
		}
		k.at[j], k.gpus[j] = i, as.Members*a.Gang.gpmOf(as.Role)
	}
	k.al = r.s.add(a, false, k.at)
	r.markListed(k.al)
	r.byGang[a.Gang.ID] = k
	a.kept = k
	r.use(k, 1)
}

// remove unbooks a kept gang.
func (r *running) remove(k *kept) {
	r.s.sumRunning(k.al, -1)
	r.s.unlist(k.al)
	r.markListed(k.al)
	r.s.allocs.remove(k.al.Gang.ID)
	delete(r.byGang, k.al.Gang.ID)
	k.gone = true
	r.use(k, -1)
}

// use adds (sign 1) or removes (-1) what an uncounted gang books on its
// nodes.
func (r *running) use(k *kept, sign int32) {
	if k.counted {
		return
	}
	al := k.al
	for j, i := range al.nodes {
		if !r.isChanged[i] {
			r.isChanged[i] = true
			r.changed = append(r.changed, i)
		}
		g := sign * al.gpus[j]
		if sign > 0 {
			r.uses++
		} else {
			r.uses--
		}
		if al.mig == "" {
			r.booked[i] += g
			continue
		}
		m := r.bookedMig[i]
		if m == nil {
			m = map[string]int32{}
			r.bookedMig[i] = m
		}
		if m[al.mig] += g; m[al.mig] == 0 {
			delete(m, al.mig)
			if len(m) == 0 {
				delete(r.bookedMig, i)
			}
		}
	}
}

// sameBooking reports whether a report of a kept gang books what it
// booked: same assignments, GPUs per assignment, queue, slices, compute
// domain and Counted.
func (k *kept) sameBooking(a *Allocation) bool {
	if a.Counted != k.counted || a.Gang.Queue != k.queue || a.Gang.ComputeDomain != k.cd ||
		a.Gang.sliceResource() != k.mig || !slices.Equal(a.Assignments, k.assignments) {
		return false
	}
	for j, as := range a.Assignments {
		if as.Members*a.Gang.gpmOf(as.Role) != k.gpus[j] {
			return false
		}
	}
	return true
}

// withCounts is a snapshot with s's layout (shared: nothing a cycle
// changes) and the counts of the inventories cs, laid out as s by pos,
// without allocations, free GPUs or indexes (withRunning and addRunning
// add them). spare, when not nil, is a dead snapshot of the same layout
// whose nodes it fills (a cycle changes none of their layout).
func (s *Snapshot) withCounts(cs []inventory.Cluster, pos [][]int32, spare *Snapshot) *Snapshot {
	t := s.onLayout()
	if spare != nil {
		t.nodes = spare.nodes
	} else {
		t.nodes = slices.Clone(s.nodes)
	}
	for ci := range cs {
		for k := range cs[ci].Nodes {
			i := pos[ci][k]
			t.setCounts(i, &t.nodes[i], &cs[ci].Nodes[k])
		}
	}
	return t
}

// onLayout is a snapshot sharing s's layout (nothing a cycle changes; the
// domains' free GPUs, dfree, are each snapshot's own), with no nodes,
// allocations or indexes yet.
func (s *Snapshot) onLayout() *Snapshot {
	return &Snapshot{clusters: s.clusters, classes: s.classes, nodeIndex: s.nodeIndex, pos: s.pos, uniqueNames: s.uniqueNames,
		nodeNames: s.nodeNames, levels: s.levels, trivial: s.trivial, maxNode: s.maxNode, maxGPUs: s.maxGPUs, productGPUs: s.productGPUs,
		allocs: newAllocSet(0), runSums: map[runKey]int{}, offAllocs: map[string]*allocation{},
		noGPUs: map[string]int{}, cdHeld: map[string]int{}}
}

// recount is withCounts then withRunning on spare, the last build of the
// same layout (dead now: the cycle that read it is over), keeping what it
// counted: a node is counted again only when its cluster reported anew
// (same says which did not), a booking on it changed (r.changed) or
// spare's cycle changed it (spare.touched), where a build read all
// 100,000 nodes' reports; and the domains' free GPUs and the domain
// index's sums are changed only by the nodes whose free GPUs or
// schedulable flag changed, where a build summed every node into every
// level afresh. The node buckets are listed afresh, so that their order is
// the one a fresh build gives. The domain buckets are kept: setFree moved
// each domain whose slots changed to its new bucket (indexFree), and the
// only reader of a bucket, the best-fit walk (bestDomainIndexed), takes
// the lowest index among equals by comparing, not by a bucket's order;
// listing 100,000 domains afresh for each member size and level was a
// third of the F-XL snapshot's CPU (docs/scale.md). The result equals
// withCounts(cs, pos, nil).withRunning(r, nil) field for field but for the
// order of the domains within a bucket.
func (s *Snapshot) recount(cs []inventory.Cluster, pos [][]int32, at []nodeRef, same []bool, r *running, spare *Snapshot) *Snapshot {
	t := s.onLayout()
	t.nodes, t.dfree, t.dindex, t.migs = spare.nodes, spare.dfree, spare.dindex, spare.migs
	t.scratch = spare.scratch  // buffers a cycle fills before it reads them
	t.dindex.clearHeldCounts() // spare's reservation marks: t has none
	t.dindex.heldDoms = [numLevels][]int32{}
	for ci := range cs {
		if !same[ci] {
			for k := range cs[ci].Nodes {
				t.recountNode(pos[ci][k], &cs[ci].Nodes[k], r)
			}
		}
	}
	for _, changed := range [...][]int32{spare.touched, r.changed} {
		for _, i := range changed {
			if ref := at[i]; same[ref.c] {
				t.recountNode(i, &cs[ref.c].Nodes[ref.k], r)
			}
		}
	}
	if len(t.migs) == 0 {
		t.migs = nil
	}
	t.takeRunning(r, spare) // reads spare.touched
	for _, i := range spare.touched {
		spare.isTouched[i] = false
	}
	t.touched, t.isTouched = spare.touched[:0], spare.isTouched
	t.buildFreeIndex(&spare.index)
	if !t.dindex.bucketsFit(t) {
		t.dindex.bucketDomains(t, &spare.dindex)
	}
	return t
}

// recountNode counts node i again from its report n and its bookings.
func (t *Snapshot) recountNode(i int32, n *inventory.Node, r *running) {
	nd := &t.nodes[i]
	free, sched := nd.free, nd.schedulable
	t.setCounts(i, nd, n)
	if g := r.booked[i]; g != 0 {
		nd.used = max(0, nd.used+g)
	}
	t.addBookedSlices(i, r.bookedMig[i])
	t.recounted(i, free, sched)
}

// addBookedSlices adds the MIG slices or shares the kept bookings hold on
// node i (by resource) to its counts.
func (t *Snapshot) addBookedSlices(i int32, booked map[string]int32) {
	for res, g := range booked {
		if c := t.slice(i, res); c != nil {
			c.used = max(0, c.used+g)
		}
	}
}

// recounted brings the sums of node i's domains to its counts, from the
// free GPUs and schedulable flag they counted it with, as
// SetNodeSchedulable and setFree keep them during a cycle (the free
// index, not built yet, is listed afresh after; the version setFree
// counts is set after too).
func (t *Snapshot) recounted(i int32, free int32, sched bool) {
	n := &t.nodes[i]
	if n.schedulable != sched {
		ok := n.schedulable
		n.schedulable = sched
		t.indexSchedulable(i, -1)
		n.schedulable = ok
		t.indexSchedulable(i, 1)
	}
	now := n.freeNow()
	n.free = free // what the sums counted
	t.setFree(i, now)
}

// withRunning adds the kept running gangs to a snapshot withCounts made:
// their allocations and lists (shared with r: a cycle changes them only
// copy-on-write), sums, and bookings on the reported usage; then sums the
// free GPUs and indexes. spare is as for withCounts: its arrays are
// filled again.
func (t *Snapshot) withRunning(r *running, spare *Snapshot) *Snapshot {
	t.takeRunning(r, spare)
	for i, g := range r.booked {
		if g != 0 {
			n := &t.nodes[i]
			n.used = max(0, n.used+g)
		}
	}
	for i, m := range r.bookedMig {
		t.addBookedSlices(i, m)
	}
	t.resum(spare)
	return t
}

// takeRunning gives t the kept running gangs: their allocations and lists
// (shared with r: a cycle changes them only copy-on-write) and sums; not
// the GPUs and slices they book (r.booked, r.bookedMig), which withRunning
// and recount add.
func (t *Snapshot) takeRunning(r *running, spare *Snapshot) {
	t.allocs = over(r.s.allocs.own) // r.s has no base: it is the Builder's own
	if spare != nil {
		// spare's lists are r's as of the last build but where spare's
		// cycle (spare.touched) or a booking since (r.listed) changed
		// them: only those are copied. Copying all 100,000 list headers
		// each cycle was a fifth of the F-XL cycle's CPU, most of it the
		// garbage collector's write barriers (docs/scale.md, session 30).
		t.onNode = spare.onNode
		for _, i := range spare.touched {
			t.onNode[i] = r.s.onNode[i]
		}
		for _, i := range r.listed {
			t.onNode[i] = r.s.onNode[i]
		}
	} else {
		t.onNode = slices.Clone(r.s.onNode)
	}
	t.runSums = maps.Clone(r.s.runSums)
	t.offAllocs = maps.Clone(r.s.offAllocs)
	t.noGPUs = maps.Clone(r.s.noGPUs)
	t.cdHeld = maps.Clone(r.s.cdHeld)
	t.version = r.uses
}

// layoutChange says what keeps clusters b from laying out as a did
// ("" when nothing does): they must be the same clusters, each with the
// same nodes in the same order and the same layout (sameNodeLayout).
func layoutChange(a, b []inventory.Cluster) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d clusters, were %d", len(b), len(a))
	}
	for ci := range a {
		x, y := &a[ci], &b[ci]
		switch {
		case x.Name != y.Name:
			return fmt.Sprintf("cluster %s in place of %s", y.Name, x.Name)
		case x.ComputeDomains != y.ComputeDomains || !maps.Equal(x.Labels, y.Labels):
			return fmt.Sprintf("cluster %s: labels or compute domains", y.Name)
		case len(x.Nodes) != len(y.Nodes):
			return fmt.Sprintf("cluster %s: %d nodes, were %d", y.Name, len(y.Nodes), len(x.Nodes))
		case len(x.Nodes) == 0 || &x.Nodes[0] == &y.Nodes[0]:
			continue // the same report: its nodes are not changed while held (Builder.Snapshot)
		}
		for k := range x.Nodes {
			if !sameNodeLayout(&x.Nodes[k], &y.Nodes[k]) {
				return fmt.Sprintf("cluster %s: node %s (was %s): name, topology, allocatable GPUs, product, taints, pool, sharing or DRA devices",
					y.Name, y.Nodes[k].Name, x.Nodes[k].Name)
			}
		}
	}
	return ""
}

// sameNodeLayout reports whether two reports of a node agree on all that
// newNode and domainKeys read but setCounts: name, topology, allocatable
// GPUs and what makes its class.
func sameNodeLayout(a, b *inventory.Node) bool {
	if a.Name != b.Name || a.Product != b.Product || a.GPUs != b.GPUs || a.Clique != b.Clique || a.Rack != b.Rack ||
		a.Block != b.Block || a.NodePool != b.NodePool || a.Shared.Requestable() != b.Shared.Requestable() ||
		!slices.EqualFunc(a.Taints, b.Taints, sameTaint) {
		return false
	}
	if a.Shared.Requestable() && a.Shared.Strategy != b.Shared.Strategy {
		return false
	}
	if (a.DRADevices == nil) != (b.DRADevices == nil) {
		return false
	}
	return a.DRADevices == nil || a.DRADevices == b.DRADevices || a.DRADevices.Key() == b.DRADevices.Key()
}

// sameTaint compares two taints by what toleration matching reads (not
// TimeAdded).
func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}
