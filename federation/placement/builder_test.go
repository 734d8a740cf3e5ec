// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// copyFleet is a deep enough copy of a fleet to change its nodes.
func copyFleet(fleet []inventory.Cluster) []inventory.Cluster {
	out := slices.Clone(fleet)
	for ci := range out {
		out[ci].Nodes = slices.Clone(out[ci].Nodes)
		out[ci].Labels = maps.Clone(out[ci].Labels)
		for k := range out[ci].Nodes {
			n := &out[ci].Nodes[k]
			n.MIG = maps.Clone(n.MIG)
			n.Taints = slices.Clone(n.Taints)
		}
	}
	return out
}

// changeCounts changes what a node reports from one report to the next:
// usage, readiness, cordons and MIG usage.
func changeCounts(rng *rand.Rand, fleet []inventory.Cluster) {
	for ci := range fleet {
		for k := range fleet[ci].Nodes {
			if rng.IntN(3) > 0 {
				continue
			}
			n := &fleet[ci].Nodes[k]
			n.UsedGPUs = rng.IntN(n.GPUs + 1)
			n.Ready = rng.IntN(10) > 0
			n.Unschedulable = rng.IntN(10) == 0
			for r, m := range n.MIG {
				m.Used = rng.IntN(m.Allocatable + 1)
				n.MIG[r] = m
			}
		}
	}
}

// changeLayout makes one change that lays the fleet out anew (step makes
// each change new).
func changeLayout(rng *rand.Rand, fleet []inventory.Cluster, step int) []inventory.Cluster {
	ci := rng.IntN(len(fleet))
	c := &fleet[ci]
	k := rng.IntN(len(c.Nodes))
	n := &c.Nodes[k]
	switch rng.IntN(8) {
	case 0:
		n.Rack += "x"
	case 1:
		n.GPUs, n.UsedGPUs = n.GPUs*2, 0
	case 2:
		n.Taints = append(n.Taints, corev1.Taint{Key: "new", Effect: corev1.TaintEffectNoSchedule})
	case 3:
		c.Nodes = append(c.Nodes, inventory.Node{Name: fmt.Sprintf("extra-%d-%d", step, len(c.Nodes)), Product: "H100", GPUs: 8, Ready: true}) // unique, as node names are
	case 4:
		c.Nodes = slices.Delete(c.Nodes, k, k+1)
	case 5:
		c.Labels = map[string]string{"region": fmt.Sprint("mars-", step)}
	case 6:
		n.Product = fmt.Sprint("B200-", step)
	default:
		n.NodePool = fmt.Sprint("pool-", step)
	}
	if len(c.Nodes) == 0 {
		return slices.Delete(fleet, ci, ci+1)
	}
	return fleet
}

// TestBuilderBuildsWhatNewSnapshotBuilds checks, over random fleets whose
// reports change from cycle to cycle (counts only, or their layout), that
// every Builder snapshot equals NewSnapshot's from the same inventories and
// allocations field for field, that the fleet is laid out afresh exactly
// when its layout changed, and that a cycle run on one build changes
// nothing of the next. Half the builds are given only what changed since
// the last (SnapshotChanged), which must build where the last build kept
// its gangs and the layout did not change.
func TestBuilderBuildsWhatNewSnapshotBuilds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	changed := 0 // builds by SnapshotChanged
	defer func() {
		if changed < 100 {
			t.Errorf("only %d builds by SnapshotChanged", changed)
		}
	}()
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 7))
		fleet := randomFleet(rng)
		var b Builder
		var kept, again []*Allocation // again: dropped by a step, to report again later
		layouts := 0
		// What the last build was given: each gang's Allocation and its
		// Counted then (a delta names what differs), and whether it kept
		// its gangs (no gang twice).
		lastPtr, lastCounted, lastKept := map[string]*Allocation{}, map[string]bool{}, false
		for step := range 16 {
			prev := fleet
			fleet = copyFleet(fleet)
			switch {
			case step == 0:
				layouts++
			case rng.IntN(4) == 0:
				fleet = changeLayout(rng, fleet, step)
				layouts++
			default:
				changeCounts(rng, fleet)
				for ci := range fleet {
					if rng.IntN(2) == 0 {
						fleet[ci] = prev[ci] // the same report again: its nodes are counted only where a booking or the cycle changed them
					}
				}
			}
			if len(fleet) == 0 {
				break
			}
			// Allocations from a cycle on a fresh snapshot: some already in
			// the inventories (Counted), some not.
			var pending []Gang
			for i := range 6 {
				pending = append(pending, randomGang(rng, 100*step+i, now))
			}
			running := Schedule(NewSnapshot(fleet, nil), Input{Now: now, Pending: pending}).Placements
			var allocs []*Allocation
			for _, p := range running {
				for _, g := range pending {
					if g.ID == p.Gang {
						allocs = append(allocs, &Allocation{Gang: g, Assignments: p.Assignments, Started: now, Counted: rng.IntN(2) == 0})
					}
				}
			}
			// Gangs of the last step still run (their bookings kept by the
			// last build), one of them now on other nodes, some ended, some
			// counted in the inventories now or no longer, their start and
			// checkpoint times moved on: changed in place, or reported as
			// another Allocation (the same, or booking otherwise).
			var dropped []*Allocation
			for i, a := range kept {
				switch {
				case rng.IntN(8) == 0 && len(again) > 0:
					// A gang a build before did not have, reported again
					// as the same Allocation: booked afresh.
					allocs = append(allocs, again[0])
					again = again[1:]
				}
				switch {
				case i == 0 && len(a.Assignments) > 1:
					c := *a
					c.Assignments = slices.Clone(a.Assignments)
					slices.Reverse(c.Assignments)
					a = &c
				case rng.IntN(4) == 0:
					dropped = append(dropped, a)
					continue
				case len(a.Gang.Roles) == 0 && a.Gang.GPUsPerMember > 1 && rng.IntN(5) == 0:
					c := *a
					c.Gang.GPUsPerMember-- // a report of the gang that books less (not seen in practice)
					a = &c
				case rng.IntN(3) == 0:
					c := *a
					c.Assignments = slices.Clone(a.Assignments)
					a = &c
				}
				if rng.IntN(3) == 0 {
					a.Counted = !a.Counted
				}
				a.Started = a.Started.Add(time.Second)
				a.LastCheckpoint = now.Add(time.Duration(step) * time.Minute)
				allocs = append(allocs, a)
			}
			again = append(again, dropped...)
			if len(allocs) > 0 && rng.IntN(10) == 0 {
				allocs = append(allocs, allocs[0]) // a gang twice: booked twice, as NewSnapshot does
			}
			kept = nil
			if rng.IntN(4) > 0 {
				kept = allocs
			}
			twice := false
			ids := map[string]bool{}
			for _, a := range allocs {
				twice = twice || ids[a.Gang.ID]
				ids[a.Gang.ID] = true
			}
			var got *Snapshot
			if !twice && rng.IntN(2) == 0 {
				var ch RunningChange
				for id := range lastPtr {
					if !ids[id] {
						ch.Gone = append(ch.Gone, id)
					}
				}
				for _, a := range allocs {
					if p, ok := lastPtr[a.Gang.ID]; !ok || p != a || lastCounted[a.Gang.ID] != a.Counted {
						ch.Set = append(ch.Set, a)
					}
				}
				laid := b.Layouts
				want := lastKept && step > 0 && layoutChange(b.invs, sortedClusters(fleet)) == ""
				var ok bool
				got, ok = b.SnapshotChanged(fleet, ch)
				if ok {
					changed++
				}
				if ok != want {
					t.Fatalf("seed %d step %d: SnapshotChanged built %v, want %v", seed, step, ok, want)
				}
				if b.Layouts != laid {
					t.Fatalf("seed %d step %d: SnapshotChanged laid the fleet out", seed, step)
				}
			}
			if got == nil {
				got = b.Snapshot(fleet, allocs)
			}
			clear(lastPtr)
			clear(lastCounted)
			for _, a := range allocs {
				lastPtr[a.Gang.ID], lastCounted[a.Gang.ID] = a, a.Counted
			}
			lastKept = !twice
			values := make([]Allocation, len(allocs)) // copied after the build: with what it kept of each
			for i, a := range allocs {
				values[i] = *a
			}
			want := NewSnapshot(fleet, values)
			checkBuckets(t, got, fmt.Sprintf("seed %d step %d", seed, step))
			if !reflect.DeepEqual(listsSorted(got), listsSorted(want)) {
				t.Fatalf("seed %d step %d: differs: %s", seed, step, snapshotDiff(listsSorted(got), listsSorted(want)))
			}
			for ci := range fleet {
				for k, n := range fleet[ci].Nodes {
					g1, u1, ok1 := got.InventoryNodeUsage(ci, k, fleet[ci].Name)
					g2, u2, ok2 := got.NodeUsage(fleet[ci].Name, n.Name)
					if !ok1 || !ok2 || g1 != g2 || u1 != u2 {
						t.Fatalf("seed %d step %d: node %s/%s: InventoryNodeUsage %d,%d,%v; NodeUsage %d,%d,%v",
							seed, step, fleet[ci].Name, n.Name, g1, u1, ok1, g2, u2, ok2)
					}
				}
			}
			if b.Layouts != layouts {
				t.Fatalf("seed %d step %d: %d layouts, want %d", seed, step, b.Layouts, layouts)
			}
			// A cycle on the build: booking, cordoning and releasing on it
			// must leave the layout the next build copies untouched.
			more := []Gang{randomGang(rng, 100*step+50, now), randomGang(rng, 100*step+51, now)}
			Schedule(got, Input{Now: now, Pending: more})
			got.SetNodeSchedulable(fleet[0].Name, fleet[0].Nodes[0].Name, false)
			released := map[string]bool{}
			for _, a := range allocs {
				if released[a.Gang.ID] {
					continue
				}
				released[a.Gang.ID] = true
				if _, err := got.Release(a.Gang.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// listsSorted is s with its per-node lists of gangs copied and sorted by
// gang and its domain buckets listed afresh (a kept gang or domain may be
// listed in another order than NewSnapshot's, which no reader depends on).
func listsSorted(s *Snapshot) *Snapshot {
	t := *s
	t.touched, t.isTouched = nil, nil // a Builder's record of what its cycle changed
	t.scratch = scratch{}             // buffers, kept from build to build
	t.allocs = s.allocs.flat()        // over the Builder's kept gangs, or not
	// A recount keeps the domain buckets, moved domain by domain (the
	// caller checks their filing): list them afresh, in a fresh build's
	// order.
	t.dindex.buckets = [numLevels]*bucketIndex{}
	t.dindex.bucketDomains(&t, &domainIndex{})
	t.onNode = make([][]*allocation, len(s.onNode))
	for i, l := range s.onNode {
		if l != nil {
			t.onNode[i] = slices.SortedStableFunc(slices.Values(l), func(a, b *allocation) int {
				return strings.Compare(a.Gang.ID, b.Gang.ID)
			})
		}
	}
	return &t
}

// snapshotDiff names the fields in which two snapshots differ, and the
// allocations that differ, to say why a comparison failed.
func snapshotDiff(a, b *Snapshot) string {
	out := ""
	chk := func(n string, x, y any) { out += differs(n, x, y, false) }
	chk("nodes", a.nodes, b.nodes)
	chk("allocs", a.allocs, b.allocs)
	chk("onNode", a.onNode, b.onNode)
	chk("runSums", a.runSums, b.runSums)
	chk("offAllocs", a.offAllocs, b.offAllocs)
	chk("cdHeld", a.cdHeld, b.cdHeld)
	chk("version", a.version, b.version)
	chk("dfree", a.dfree, b.dfree)
	chk("index", a.index, b.index)
	chk("dindex", a.dindex, b.dindex)
	out += dindexDiff(&a.dindex, &b.dindex)
	for id, al := range a.allocs.all() {
		if bl, _ := b.allocs.get(id); !reflect.DeepEqual(al, bl) {
			out += fmt.Sprintf("\n%s: %+v\n vs %+v", id, *al, bl)
		}
	}
	return out
}

// TestBuilderIgnoresTaintTimes checks that a taint's TimeAdded, which no
// toleration matching reads, neither splits node classes nor lays the
// fleet out again.
func TestBuilderIgnoresTaintTimes(t *testing.T) {
	at := func(s int) []corev1.Taint {
		tm := metav1.NewTime(time.Unix(int64(s), 0))
		return []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &tm}}
	}
	fleet := []inventory.Cluster{{Name: "c", Nodes: []inventory.Node{
		{Name: "a", Product: "H100", GPUs: 8, Ready: true, Taints: at(1)},
		{Name: "b", Product: "H100", GPUs: 8, Ready: true, Taints: at(2)},
	}}}
	var b Builder
	s := b.Snapshot(fleet, nil)
	if len(s.classes) != 1 {
		t.Errorf("%d node classes, want 1", len(s.classes))
	}
	next := copyFleet(fleet)
	next[0].Nodes[0].Taints = at(3)
	b.Snapshot(next, nil)
	if b.Layouts != 1 {
		t.Errorf("%d layouts, want 1", b.Layouts)
	}
}
