// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
	"unique"
)

// ErrUnknownGang is returned by Release for a gang the snapshot does not hold.
var ErrUnknownGang = errors.New("unknown gang")

// ErrConflict is returned by Assume when the placement does not fit the
// snapshot (a node is unknown, lacks free GPUs, or the gang already runs).
var ErrConflict = errors.New("placement conflicts with the snapshot")

// Assume books a placement of g that started at the given time, as a
// scheduler does once it has committed a decision.
func (s *Snapshot) Assume(g Gang, p Placement, started time.Time) error {
	_, err := s.assume(g, p, started, nil)
	return err
}

// assume is Assume; at, when not nil, holds the node index of each of the
// placement's assignments (placement's scratch.assigned), so that they are
// not looked up by name. Only a snapshot whose "cluster/node" names are
// unique (uniqueNames) may be given them: there a name lookup finds that
// very node.
func (s *Snapshot) assume(g Gang, p Placement, started time.Time, at []int32) (*allocation, error) {
	if _, dup := s.allocs.get(g.ID); dup {
		return nil, fmt.Errorf("%w: gang %s already holds GPUs", ErrConflict, g.ID)
	}
	g.class = unique.Handle[classMemo]{} // the pending gang's memo, not the allocation's
	a := &Allocation{Gang: g, Assignments: p.Assignments, Started: started}
	for k, as := range a.Assignments {
		gpm := int32(g.gpmOf(as.Role))
		if gpm <= 0 && len(g.Roles) > 0 {
			continue // a CPU-only role takes no GPUs
		}
		i, ok := s.nodeOf(as, at, k)
		if !ok {
			return nil, fmt.Errorf("%w: unknown node %s/%s", ErrConflict, as.Cluster, as.Node)
		}
		if s.capacity(i, gpm, g.sliceResource()) < int32(as.Members) {
			return nil, fmt.Errorf("%w: node %s/%s has no room for %d members", ErrConflict, as.Cluster, as.Node, as.Members)
		}
	}
	return s.add(a, true, at), nil
}

// nodeOf returns the node of assignment k: at[k] (-1: unknown), or found
// by name.
func (s *Snapshot) nodeOf(as Assignment, at []int32, k int) (int32, bool) {
	if at != nil {
		return at[k], at[k] >= 0
	}
	i, ok := s.nodeAt(as.Cluster, as.Node)
	return i, ok
}

// add records an allocation; book subtracts its GPUs from the nodes. at is
// as for assume.
func (s *Snapshot) add(a *Allocation, book bool, at []int32) *allocation {
	var al *allocation
	if s.bulk && len(s.slab.allocs) > 0 {
		al, s.slab.allocs = &s.slab.allocs[0], s.slab.allocs[1:]
		n := len(a.Assignments)
		al.nodes, al.gpus, s.slab.ints = s.slab.ints[0:0:n], s.slab.ints[n:n:2*n], s.slab.ints[2*n:]
	} else {
		n := len(a.Assignments)
		ints := make([]int32, 2*n)
		al = &allocation{nodes: ints[0:0:n], gpus: ints[n : n : 2*n]}
	}
	al.Allocation, al.mig = a, a.Gang.sliceResource()
	for k, as := range a.Assignments {
		gpus := int32(as.Members * a.Gang.gpmOf(as.Role))
		if gpus <= 0 {
			continue // a CPU-only role takes no GPUs
		}
		i, ok := s.nodeOf(as, at, k)
		if !ok {
			al.offGPUs += int(gpus)
			continue
		}
		al.nodes = append(al.nodes, i)
		al.gpus = append(al.gpus, gpus)
		al.addClass(s.nodes[i].class, gpus)
		if book {
			s.use(i, al.mig, gpus)
		}
	}
	if old, ok := s.allocs.get(a.Gang.ID); ok {
		s.sumRunning(old, -1)
		if !s.bulk {
			s.unlist(old)
		}
	}
	s.allocs.set(a.Gang.ID, al)
	s.sumRunning(al, 1)
	if s.bulk {
		s.slab.added = append(s.slab.added, al) // listed by listAll
	} else {
		s.list(al)
	}
	return al
}

// bulkSlab is what addRunning allocates at once for the allocations it
// adds: their structs, their node and GPU lists, and the allocations in
// the order added (listAll lists them on their nodes).
type bulkSlab struct {
	allocs []allocation
	ints   []int32
	added  []*allocation
}

// listAll lists the allocations added in bulk on their nodes, in the order
// added (as list would have), each node's list a slice of one array. The
// snapshot is fresh (addRunning): no node lists anything yet.
func (s *Snapshot) listAll() {
	count := make([]int32, len(s.nodes))
	total := 0
	live := s.slab.added[:0]
	for _, al := range s.slab.added {
		if cur, _ := s.allocs.get(al.Gang.ID); cur != al {
			continue // replaced by a later allocation of the gang
		}
		live = append(live, al)
		for _, i := range al.nodes {
			count[i]++
			total++
		}
	}
	backing := make([]*allocation, total)
	at := 0
	for i, n := range count {
		if n > 0 {
			s.onNode[i] = backing[at : at : at+int(n)]
			at += int(n)
		}
	}
	for _, al := range live {
		for _, i := range al.nodes {
			s.onNode[i] = append(s.onNode[i], al)
		}
	}
	s.slab = bulkSlab{}
}

// list adds an allocation to the per-node lists of the nodes it holds GPUs
// on, so that what runs on a node is found without visiting every
// allocation; unlist removes it. They follow s.allocs exactly (an
// allocation naming a node twice is listed twice there, which changes no
// maximum its readers take). Both copy a list they change, never change
// it in place: the snapshots a Builder returns share the lists with the
// gangs it keeps.
func (s *Snapshot) list(al *allocation) {
	for _, i := range al.nodes {
		s.touch(i) // a Builder copies the changed lists back (takeRunning)
		l := s.onNode[i]
		s.onNode[i] = append(l[:len(l):len(l)], al)
	}
}

func (s *Snapshot) unlist(al *allocation) {
	for _, i := range al.nodes {
		s.touch(i)
		l := s.onNode[i]
		if !slices.Contains(l, al) {
			continue
		}
		var out []*allocation
		for _, x := range l {
			if x != al {
				out = append(out, x)
			}
		}
		s.onNode[i] = out
	}
}

// sumRunning adds (sign 1) or removes (-1) an allocation's GPUs in the
// per-queue sums a cycle charges (chargeRunning), so that a cycle does not
// visit every running gang to charge the queues.
func (s *Snapshot) sumRunning(al *allocation, sign int) {
	if al.Gang.ComputeDomain {
		s.holdCliques(al, sign)
	}
	for _, cg := range al.byClass {
		k := runKey{al.Gang.Queue, al.mig, cg.class}
		if s.runSums[k] += sign * int(cg.gpus); s.runSums[k] == 0 {
			delete(s.runSums, k)
		}
	}
	if al.offGPUs > 0 {
		if sign > 0 {
			s.offAllocs[al.Gang.ID] = al
		} else if s.offAllocs[al.Gang.ID] == al {
			delete(s.offAllocs, al.Gang.ID)
		}
	}
	if len(al.byClass) == 0 && al.offGPUs == 0 {
		if s.noGPUs[al.Gang.Queue] += sign; s.noGPUs[al.Gang.Queue] == 0 {
			delete(s.noGPUs, al.Gang.Queue)
		}
	}
}

// addClass adds GPUs on a node of class c to the per-class sums.
func (al *allocation) addClass(c, gpus int32) {
	for k := range al.byClass {
		if al.byClass[k].class == c {
			al.byClass[k].gpus += gpus
			return
		}
	}
	al.byClass = append(al.byClass, classGPUs{c, gpus})
}

// use adds (or with a negative count removes) usage on a node.
func (s *Snapshot) use(i int32, mig string, count int32) {
	s.version++
	s.touch(i)
	n := &s.nodes[i]
	if mig != "" {
		if m := s.slice(i, mig); m != nil {
			m.used = max(0, m.used+count)
		}
		return
	}
	n.used = max(0, n.used+count)
	if !s.bulk {
		s.setFree(i, n.freeNow())
	}
}

// touch records that node i's counts changed (Snapshot.touched).
func (s *Snapshot) touch(i int32) {
	if s.isTouched != nil && !s.isTouched[i] {
		s.isTouched[i] = true
		s.touched = append(s.touched, i)
	}
}

// Release frees a gang's GPUs and forgets it.
func (s *Snapshot) Release(gang string) (Allocation, error) {
	al, ok := s.allocs.get(gang)
	if !ok {
		return Allocation{}, fmt.Errorf("%w: %s", ErrUnknownGang, gang)
	}
	s.unbook(al)
	s.sumRunning(al, -1)
	s.unlist(al)
	s.allocs.remove(gang)
	return *al.Allocation, nil
}

func (s *Snapshot) unbook(al *allocation) {
	for k, i := range al.nodes {
		s.use(i, al.mig, -al.gpus[k])
	}
}

func (s *Snapshot) rebook(al *allocation) {
	for k, i := range al.nodes {
		s.use(i, al.mig, al.gpus[k])
	}
}

// SetNodeSchedulable marks a node (un)schedulable, e.g. when it fails or is
// cordoned. It reports whether the node is known.
func (s *Snapshot) SetNodeSchedulable(cluster, name string, ok bool) bool {
	i, known := s.nodeAt(cluster, name)
	if !known {
		return false
	}
	s.version++
	s.touch(i)
	s.indexSchedulable(i, -1)
	s.nodes[i].schedulable = ok
	s.indexSchedulable(i, 1)
	s.setFree(i, s.nodes[i].freeNow())
	return true
}

// GangsOnNode lists the gangs holding GPUs on a node, sorted.
func (s *Snapshot) GangsOnNode(cluster, name string) []string {
	i, known := s.nodeAt(cluster, name)
	if !known {
		return nil
	}
	var out []string
	for id, al := range s.allocs.all() {
		for _, n := range al.nodes {
			if n == i {
				out = append(out, id)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Running returns the allocations the snapshot holds, sorted by gang ID.
func (s *Snapshot) Running() []Allocation {
	out := make([]Allocation, 0, s.allocs.len())
	for _, al := range s.allocs.all() {
		out = append(out, *al.Allocation)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gang.ID < out[j].Gang.ID })
	return out
}

// Allocation returns the allocation of a gang.
func (s *Snapshot) Allocation(gang string) (Allocation, bool) {
	al, ok := s.allocs.get(gang)
	if !ok {
		return Allocation{}, false
	}
	return *al.Allocation, true
}

// GPUs returns the whole GPUs of the fleet and those free on schedulable nodes.
func (s *Snapshot) GPUs() (total, free int) {
	for d := range s.levels[lvCluster] {
		total += int(s.levels[lvCluster][d].gpus)
		free += int(s.dfree[lvCluster][d])
	}
	return total, free
}

// NodeFree returns the free whole GPUs of a node (0 if unknown or unschedulable).
func (s *Snapshot) NodeFree(cluster, name string) int {
	i, ok := s.nodeAt(cluster, name)
	if !ok {
		return 0
	}
	return int(s.nodes[i].free)
}

// FreeByCluster returns the free whole GPUs of each cluster by product, as
// a per-cluster summed view (one virtual node per cluster) would show them.
func (s *Snapshot) FreeByCluster() map[string]map[string]int {
	out := make(map[string]map[string]int, len(s.clusters))
	for i := range s.nodes {
		n := &s.nodes[i]
		c := s.clusters[n.cluster].name
		if out[c] == nil {
			out[c] = map[string]int{}
		}
		out[c][s.classes[n.class].product] += int(n.free)
	}
	return out
}

// Clusters returns the cluster names, sorted.
func (s *Snapshot) Clusters() []string {
	out := make([]string, len(s.clusters))
	for i, c := range s.clusters {
		out[i] = c.name
	}
	return out
}

// Checkpointed records that a running gang saved its work at t, so that a
// preemption search counts only the work done since then as lost; the time
// since its previous checkpoint (or its start) becomes its checkpoint
// interval.
func (s *Snapshot) Checkpointed(gang string, t time.Time) error {
	al, ok := s.allocs.get(gang)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownGang, gang)
	}
	prev := al.Started
	if al.LastCheckpoint.After(prev) {
		prev = al.LastCheckpoint
	}
	if t.After(prev) {
		a := *al.Allocation // shared: replaced, not changed
		a.LastCheckpoint, a.CheckpointInterval = t, t.Sub(prev)
		if prev.IsZero() {
			a.CheckpointInterval = 0 // not started: no interval known yet
		}
		al.Allocation = &a
	}
	return nil
}
