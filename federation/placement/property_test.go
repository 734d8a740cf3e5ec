// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// randomFleet builds 1–3 clusters with random racks, cliques, blocks,
// occupancy, cordons, taints and a MIG node.
func randomFleet(rng *rand.Rand) []inventory.Cluster {
	var out []inventory.Cluster
	for c := range 1 + rng.IntN(3) {
		cl := inventory.Cluster{Name: fmt.Sprintf("c%d", c), Labels: map[string]string{"region": []string{"eu", "us"}[rng.IntN(2)]}}
		racks, per := 1+rng.IntN(4), 1+rng.IntN(6)
		gpus := []int{4, 8}[rng.IntN(2)]
		product := []string{"H100", "GB200"}[rng.IntN(2)]
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
				if rng.IntN(10) == 0 {
					node.Taints = []corev1.Taint{{Key: "maint", Effect: corev1.TaintEffectNoSchedule}}
				}
				if rng.IntN(10) == 0 {
					node.MIG = map[string]inventory.MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7, Used: rng.IntN(8)}}
				}
				cl.Nodes = append(cl.Nodes, node)
			}
		}
		out = append(out, cl)
	}
	return out
}

var levelsOrNone = []inventory.Level{"", "", inventory.LevelNode, inventory.LevelNVLink, inventory.LevelRack, inventory.LevelBlock, inventory.LevelCluster}

func randomGang(rng *rand.Rand, id int, now time.Time) Gang {
	gpm := []int{1, 2, 4, 8}[rng.IntN(4)]
	g := Gang{ID: fmt.Sprintf("g%03d", id), Queue: []string{"a/x", "a/y", "b"}[rng.IntN(3)],
		Members: 1 + rng.IntN(6), GPUsPerMember: gpm, Submitted: now.Add(time.Duration(rng.IntN(100)) * time.Second),
		Priority:    []int32{PriorityDevelopment, PriorityBatch, PriorityProduction}[rng.IntN(3)],
		Preemptible: rng.IntN(3) > 0, MaxClusters: 1 + rng.IntN(2),
		Topology: Topology{Required: levelsOrNone[rng.IntN(len(levelsOrNone))]},
		Policy:   []Policy{BinPack, Spread}[rng.IntN(2)]}
	if rng.IntN(10) == 0 {
		g.MIGResource, g.GPUsPerMember = "nvidia.com/mig-1g.10gb", 1
	}
	if rng.IntN(5) == 0 {
		g.Tolerations = []corev1.Toleration{{Key: "maint", Operator: corev1.TolerationOpExists}}
	}
	if rng.IntN(5) == 0 {
		g.Products = []string{"H100"}
	}
	return g
}

// invariants checks every allocation in s against the original inventory,
// computed independently of the snapshot's indexes.
func invariants(t *testing.T, fleet []inventory.Cluster, s *Snapshot) {
	t.Helper()
	type key struct{ c, n string }
	nodes := map[key]inventory.Node{}
	clusterOf := map[string]inventory.Cluster{}
	for _, c := range fleet {
		clusterOf[c.Name] = c
		for _, n := range c.Nodes {
			nodes[key{c.Name, n.Name}] = n
		}
	}
	used := map[key]int{}
	mig := map[key]int{}
	for _, a := range s.Running() {
		g := a.Gang
		members := 0
		clusters := map[string]bool{}
		doms := map[int]map[string]bool{}
		for _, as := range a.Assignments {
			n, ok := nodes[key{as.Cluster, as.Node}]
			if !ok {
				t.Fatalf("%s on unknown node %s/%s", g.ID, as.Cluster, as.Node)
			}
			if !n.Schedulable() || !tolerates(g.Tolerations, n.Taints) || !productMatches(g.Products, n.Product) ||
				!clusterMatches(&g, mustSelector(t, &g), as.Cluster, clusterOf[as.Cluster].Labels) {
				t.Fatalf("%s on ineligible node %s/%s", g.ID, as.Cluster, as.Node)
			}
			members += as.Members
			clusters[as.Cluster] = true
			if g.MIGResource != "" {
				mig[key{as.Cluster, as.Node}] += as.Members * g.GPUsPerMember
			} else {
				used[key{as.Cluster, as.Node}] += as.Members * g.GPUsPerMember
			}
			keys := domainKeys(&n)
			for l := range numLevels {
				if doms[l] == nil {
					doms[l] = map[string]bool{}
				}
				doms[l][as.Cluster+"/"+keys[l]] = true
			}
		}
		if members != g.Members {
			t.Fatalf("partial gang %s: %d of %d members", g.ID, members, g.Members)
		}
		if len(clusters) > max(1, g.MaxClusters) {
			t.Fatalf("%s spans %d clusters, max %d", g.ID, len(clusters), g.MaxClusters)
		}
		if l, ok := levelIndex(g.Topology.Required); ok {
			if l == lvCluster && len(clusters) > 1 || l < lvCluster && len(doms[l]) > 1 {
				t.Fatalf("%s breaks required %s: %v", g.ID, g.Topology.Required, a.Assignments)
			}
		}
	}
	for k, u := range used {
		n := nodes[k]
		if n.UsedGPUs+u > n.GPUs {
			t.Fatalf("double booking on %v: %d used + %d booked > %d", k, n.UsedGPUs, u, n.GPUs)
		}
	}
	for k, u := range mig {
		m := nodes[k].MIG["nvidia.com/mig-1g.10gb"]
		if m.Used+u > m.Allocatable {
			t.Fatalf("MIG double booking on %v", k)
		}
	}
}

func TestPropertyRandomFleets(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	var st propStats
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runProperty(t, uint64(seed), &st)
		})
	}
	// The mixes must exercise what the invariants guard.
	if st.placed == 0 || st.preempted == 0 || st.reserved == 0 || st.multi == 0 {
		t.Errorf("random mixes too tame: %+v", st)
	}
}

type propStats struct{ placed, preempted, reserved, multi int }

func runProperty(t *testing.T, seed uint64, st *propStats) {
	rng := rand.New(rand.NewPCG(seed, 7))
	fleet := randomFleet(rng)
	s := NewSnapshot(fleet, nil)
	twin := NewSnapshot(fleet, nil)
	var pending []Gang
	next := 0
	var res []Reservation
	terminating := map[string]string{}
	preemptedBy := map[string]string{} // victim → preemptor, ever
	now := t0
	for cycle := range 8 {
		for range 1 + rng.IntN(8) {
			pending = append(pending, randomGang(rng, next, now))
			next++
		}
		in := Input{Now: now, Pending: pending, Reservations: res, Terminating: terminating,
			Queues: []Queue{{Name: "a", Weight: 2}, {Name: "b"}}}
		d := Schedule(s, in, WithReclaim())
		// The twin is given the same gangs by reference (PendingRefs).
		byRef := in
		byRef.Pending, byRef.PendingRefs = nil, make([]*Gang, len(pending))
		for i := range pending {
			byRef.PendingRefs[i] = &pending[i]
		}
		d2 := Schedule(twin, byRef, WithReclaim())
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("cycle %d: same snapshot and gangs (by value, by reference) gave different decisions:\n%+v\n%+v", cycle, d, d2)
		}
		invariants(t, fleet, s)
		st.placed += len(d.Placements)
		st.preempted += len(d.Preemptions)
		st.reserved += len(d.Reservations)
		for _, p := range d.Placements {
			if len(p.Clusters) > 1 {
				st.multi++
			}
		}
		placed := placedIDs(d)
		var still []Gang
		for _, g := range pending {
			if !placed[g.ID] {
				still = append(still, g)
			}
		}
		pending = still
		for _, p := range d.Preemptions {
			al, ok := s.Allocation(p.Victim)
			if !ok || !al.Gang.Preemptible {
				t.Fatalf("preempted %s: non-preemptible or not running", p.Victim)
			}
			if prev, ok := preemptedBy[p.Preemptor]; ok && prev == p.Victim {
				t.Fatalf("preemption loop: %s and %s preempt each other", p.Victim, p.Preemptor)
			}
			if _, again := terminating[p.Victim]; again {
				t.Fatalf("%s preempted twice", p.Victim)
			}
			preemptedBy[p.Victim] = p.Preemptor
			terminating[p.Victim] = p.Preemptor
		}
		// Victims leave after their grace period (next cycle); some gangs end.
		for v := range terminating {
			if rng.IntN(2) == 0 {
				mustRelease(t, s, twin, v)
				delete(terminating, v)
				pending = append(pending, requeue(v))
			}
		}
		for _, a := range s.Running() {
			if _, term := terminating[a.Gang.ID]; !term && rng.IntN(4) == 0 {
				mustRelease(t, s, twin, a.Gang.ID)
			}
		}
		res = d.Reservations
		now = now.Add(10 * time.Minute)
	}
}

func mustRelease(t *testing.T, a, b *Snapshot, id string) {
	t.Helper()
	if _, err := a.Release(id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(id); err != nil {
		t.Fatal(err)
	}
}

// requeue is a preempted gang back in line (tests only need a distinct ID).
func requeue(id string) Gang {
	return Gang{ID: id + "-r", Queue: "b", Members: 1, GPUsPerMember: 1, Priority: PriorityDevelopment, Preemptible: true}
}
