// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// indexFleet builds 1–6 clusters; some clusters are uniform (one product,
// no taints, no MIG: the index answers for them), others mixed (it counts
// node by node), so both paths meet in one decision.
func indexFleet(rng *rand.Rand) []inventory.Cluster {
	var out []inventory.Cluster
	for c := range 1 + rng.IntN(6) {
		cl := inventory.Cluster{Name: fmt.Sprintf("c%d", c), Labels: map[string]string{"region": []string{"eu", "us"}[rng.IntN(2)]}}
		mixed := rng.IntN(3) == 0
		racks, per := 1+rng.IntN(6), 1+rng.IntN(8)
		gpus := []int{4, 8}[rng.IntN(2)]
		products := []string{"H100", "GB200"}
		product := products[rng.IntN(2)]
		clique := rng.IntN(2) == 0
		for r := range racks {
			for n := range per {
				node := inventory.Node{Name: fmt.Sprintf("r%d-n%d", r, n), Product: product, GPUs: gpus,
					UsedGPUs: rng.IntN(gpus + 1), Ready: rng.IntN(20) > 0, Unschedulable: rng.IntN(20) == 0}
				if rng.IntN(5) > 0 {
					node.Rack = fmt.Sprintf("r%d", r)
				}
				if rng.IntN(2) == 0 {
					node.Block = fmt.Sprintf("b%d", r/2)
				}
				if clique {
					node.Clique = fmt.Sprintf("q%d", r)
				}
				if mixed && rng.IntN(4) == 0 {
					node.Taints = []corev1.Taint{{Key: "maint", Effect: corev1.TaintEffectNoSchedule}}
				}
				if mixed && rng.IntN(4) == 0 {
					node.Product = products[rng.IntN(2)]
				}
				if mixed && rng.IntN(6) == 0 {
					node.MIG = map[string]inventory.MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7, Used: rng.IntN(8)}}
				}
				cl.Nodes = append(cl.Nodes, node)
			}
		}
		out = append(out, cl)
	}
	return out
}

// refSlots is the plain linear count the index replaces: the members of r
// that fit in a domain and the free GPUs of the nodes where one fits,
// node by node.
func refSlots(s *Snapshot, r *request, l int, d int32) (slots, free int32) {
	dom := &s.levels[l][d]
	for i := dom.lo; i < dom.hi; i++ {
		n := &s.nodes[i]
		if !r.classOK[n.class] || !n.schedulable {
			continue
		}
		if s.holders != nil {
			if h := s.holders[i]; h >= 0 && h != r.holder && r.endsAt > s.holdStart[h] {
				continue
			}
		}
		if r.within >= 0 && n.dom[r.within] != r.withinDom {
			continue
		}
		var k, f int32
		if r.mig == "" {
			f = n.free
		} else if m := s.slice(int32(i), r.mig); m != nil {
			f = m.free()
		}
		k = f / r.gpm
		if k > 0 {
			slots += k
			free += f
		}
	}
	return slots, free
}

// refRoom is what a domain would hold empty, node by node.
func refRoom(s *Snapshot, r *request, l int, d int32) int32 {
	dom := &s.levels[l][d]
	var k int32
	for i := dom.lo; i < dom.hi; i++ {
		n := &s.nodes[i]
		if !r.classOK[n.class] || !n.schedulable || (s.holders != nil && s.holders[i] >= 0) {
			continue
		}
		k += s.capacity1(r, i)
	}
	return k
}

// checkIndex compares every answer the index gives with the linear count,
// for every level and domain, and the kept sums with sums built afresh.
func checkIndex(t *testing.T, s *Snapshot, r *request, what string) (answered int) {
	t.Helper()
	for l := lvNVLink; l < numLevels; l++ {
		for d := range int32(len(s.levels[l])) {
			if k, f, ok := s.countedSlots(r, l, d); ok {
				answered++
				if rk, rf := refSlots(s, r, l, d); k != rk || f != rf {
					t.Fatalf("%s: level %d domain %s: index says %d members / %d free, nodes say %d / %d",
						what, l, s.levels[l][d].name, k, f, rk, rf)
				}
			}
			if k, ok := s.countedRoom(r, l, d); ok {
				if rk := refRoom(s, r, l, d); k != rk {
					t.Fatalf("%s: level %d domain %s: index says room %d, nodes say %d", what, l, s.levels[l][d].name, k, rk)
				}
			}
		}
	}
	fresh := &Snapshot{nodes: s.nodes, levels: s.levels, trivial: s.trivial, maxNode: s.maxNode, maxGPUs: s.maxGPUs}
	fresh.buildDomainIndex(nil)
	for i := range s.holders {
		if s.holders[i] >= 0 {
			fresh.setHolder(int32(i), s.holders[i])
		}
	}
	fresh.holders = nil
	if s.holders == nil {
		fresh.dindex.clearHeldCounts()
	}
	checkBuckets(t, s, what)
	kept, built := s.dindex, fresh.dindex
	kept.buckets, built.buckets = [numLevels]*bucketIndex{}, [numLevels]*bucketIndex{}
	kept.heldDoms, built.heldDoms = [numLevels][]int32{}, [numLevels][]int32{}
	if !reflect.DeepEqual(kept, built) {
		t.Fatalf("%s: the kept sums drifted from sums built afresh", what)
	}
	return answered
}

// checkRunSums requires the per-queue sums of the running gangs to equal
// sums recounted from every allocation's nodes.
func checkRunSums(t *testing.T, s *Snapshot, what string) {
	t.Helper()
	want, off, none := map[runKey]int{}, map[string]*allocation{}, map[string]int{}
	for id, al := range s.allocs.all() {
		for k, i := range al.nodes {
			want[runKey{al.Gang.Queue, al.mig, s.nodes[i].class}] += int(al.gpus[k])
		}
		if al.offGPUs > 0 {
			off[id] = al
		}
		if len(al.byClass) == 0 && al.offGPUs == 0 {
			none[al.Gang.Queue]++
		}
	}
	if !reflect.DeepEqual(want, s.runSums) || !reflect.DeepEqual(off, s.offAllocs) || !reflect.DeepEqual(none, s.noGPUs) {
		t.Fatalf("%s: running sums %v, recounted %v (off %d, %d; without GPUs %v, %v)", what, s.runSums, want,
			len(s.offAllocs), len(off), s.noGPUs, none)
	}
}

// checkBuckets requires every domain in exactly the bucket of its slots
// for every member size, with consistent links, and every domain with
// held nodes listed as such.
func checkBuckets(t *testing.T, s *Snapshot, what string) {
	t.Helper()
	x := &s.dindex
	for l := lvNVLink; l < numLevels; l++ {
		if x.stride == 0 || x.own[l] != l {
			continue
		}
		b := x.buckets[l]
		for g := int32(1); g <= x.stride; g++ {
			seen := make([]bool, b.n)
			for k, h := range b.head[g-1] {
				prev := int32(-1)
				for d := h; d >= 0; d = b.next[(g-1)*b.n+d] {
					if seen[d] || b.prev[(g-1)*b.n+d] != prev || x.all.slots[l][d*x.stride+g-1] != int32(k) {
						t.Fatalf("%s: level %d size %d: domain %d misfiled in bucket %d", what, l, g, d, k)
					}
					seen[d], prev = true, d
				}
			}
			for k := b.top[g-1] + 1; k < int32(len(b.head[g-1])); k++ {
				if b.head[g-1][k] >= 0 {
					t.Fatalf("%s: level %d size %d: bucket %d above the top %d holds a domain", what, l, g, k, b.top[g-1])
				}
			}
			for d, ok := range seen {
				if !ok {
					t.Fatalf("%s: level %d size %d: domain %d in no bucket", what, l, g, d)
				}
			}
		}
		for d, h := range x.held[l] {
			if h > 0 && !slices.Contains(x.heldDoms[l], int32(d)) {
				t.Fatalf("%s: level %d: domain %d holds %d held nodes but is not listed", what, l, d, h)
			}
		}
	}
}

// TestDomainIndexMatchesLinearCount moves random fleets through bookings,
// releases, cordons and reservation marks and checks, after each step,
// that every answer of the index equals the plain node-by-node count.
func TestDomainIndexMatchesLinearCount(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	answered := 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		fleet := indexFleet(rng)
		s := NewSnapshot(fleet, nil)
		var live []string
		for step := range 30 {
			g := randomGang(rng, step, t0)
			if rng.IntN(4) == 0 {
				g.Clusters = []string{fleet[rng.IntN(len(fleet))].Name}
			}
			what := fmt.Sprintf("seed %d step %d", seed, step)
			switch rng.IntN(5) {
			case 0: // cordon or uncordon a node
				c := fleet[rng.IntN(len(fleet))]
				s.SetNodeSchedulable(c.Name, c.Nodes[rng.IntN(len(c.Nodes))].Name, rng.IntN(2) == 0)
			case 1: // mark or unmark a node held
				i := int32(rng.IntN(len(s.nodes)))
				if s.holdStart == nil || rng.IntN(2) == 0 {
					s.holdStart = append(s.holdStart, t0.Add(time.Duration(rng.IntN(3))*time.Hour).UnixNano())
				}
				s.setHolder(i, int32(rng.IntN(len(s.holdStart)+1))-1)
			case 2:
				if rng.IntN(3) == 0 {
					s.clearHolds()
				}
			case 3:
				if len(live) > 0 {
					if _, err := s.Release(live[0]); err != nil {
						t.Fatal(err)
					}
					live = live[1:]
				}
			}
			if validate(&g) != nil {
				continue
			}
			r := s.newRequest(&g, params{})
			if rng.IntN(3) == 0 && len(s.holdStart) > 0 {
				r.holder = int32(rng.IntN(len(s.holdStart)))
			}
			if rng.IntN(3) == 0 {
				r.endsAt = t0.Add(time.Duration(rng.IntN(3)) * time.Hour).UnixNano()
			}
			if rng.IntN(3) == 0 {
				r.within = rng.IntN(numLevels)
				r.withinDom = int32(rng.IntN(len(s.levels[r.within])))
			}
			answered += checkIndex(t, s, r, what)
			checkRunSums(t, s, what)
			r.within = -1
			if p, err := s.Place(g); err == nil && s.Assume(g, p, t0) == nil {
				live = append(live, g.ID)
			}
		}
	}
	if answered == 0 {
		t.Fatal("the index never answered: the test checks nothing")
	}
}

// TestIndexedScheduleEqualsLinear runs the same random cycles (placements,
// preemptions, reservations, departures, cordons) on two snapshots of the
// same fleet, one with the domain index and one counting every domain node
// by node, and requires the same decisions and explanations every cycle.
func TestIndexedScheduleEqualsLinear(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	placed := 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		fleet := indexFleet(rng)
		s := NewSnapshot(fleet, nil)
		lin := NewSnapshot(fleet, nil)
		lin.dindex = domainIndex{} // every domain counted node by node
		var pending []Gang
		var res []Reservation
		terminating := map[string]string{}
		now := t0
		for cycle := range 8 {
			for range 1 + rng.IntN(10) {
				g := randomGang(rng, len(pending)+100*cycle, now)
				if rng.IntN(4) == 0 {
					g.Estimate = time.Duration(1+rng.IntN(120)) * time.Minute
				}
				pending = append(pending, g)
			}
			in := Input{Now: now, Pending: pending, Reservations: res, Terminating: terminating,
				Queues: []Queue{{Name: "a", Weight: 2}, {Name: "b"}}}
			opts := []Option{WithReclaim(), WithQuality()}
			d, dl := Schedule(s, in, opts...), Schedule(lin, in, opts...)
			if !reflect.DeepEqual(d, dl) {
				t.Fatalf("seed %d cycle %d: indexed and linear decisions differ:\n%+v\n%+v", seed, cycle, d, dl)
			}
			placed += len(d.Placements)
			for _, g := range pending {
				for _, opts := range [][]PlaceOption{nil, {FirstFit()}, {IgnoreTopology()}} {
					p1, e1 := s.Place(g, opts...)
					p2, e2 := lin.Place(g, opts...)
					if !reflect.DeepEqual(p1, p2) || fmt.Sprint(e1) != fmt.Sprint(e2) {
						t.Fatalf("seed %d: Place(%s) gives %+v, %v indexed and %+v, %v linear", seed, g.ID, p1, e1, p2, e2)
					}
				}
				for _, l := range []inventory.Level{inventory.LevelNVLink, inventory.LevelRack} {
					if a, b := s.MinDomains(g, l), lin.MinDomains(g, l); a != b {
						t.Fatalf("seed %d: MinDomains(%s, %s) = %d indexed, %d linear", seed, g.ID, l, a, b)
					}
				}
			}
			done := placedIDs(d)
			var still []Gang
			for _, g := range pending {
				if !done[g.ID] {
					still = append(still, g)
				}
			}
			pending = still
			for _, p := range d.Preemptions {
				terminating[p.Victim] = p.Preemptor
			}
			for v := range terminating {
				if rng.IntN(2) == 0 {
					mustRelease(t, s, lin, v)
					delete(terminating, v)
				}
			}
			for _, a := range s.Running() {
				if _, term := terminating[a.Gang.ID]; !term && rng.IntN(4) == 0 {
					mustRelease(t, s, lin, a.Gang.ID)
				}
			}
			c := fleet[rng.IntN(len(fleet))]
			n, ok := c.Nodes[rng.IntN(len(c.Nodes))].Name, rng.IntN(3) > 0
			s.SetNodeSchedulable(c.Name, n, ok)
			lin.SetNodeSchedulable(c.Name, n, ok)
			res = d.Reservations
			now = now.Add(10 * time.Minute)
		}
	}
	if placed == 0 {
		t.Fatal("no gang placed: the test checks nothing")
	}
}
