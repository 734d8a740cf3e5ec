// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClassFollowsTheGangsFields: a gang keeps its class from cycle to
// cycle, and gets the class of its new fields whenever one that makes the
// class changes (the same gang object, as the hub's pending forms are).
func TestClassFollowsTheGangsFields(t *testing.T) {
	fresh := func(g *Gang) classMemo {
		c := *g
		c.class = unique.Handle[classMemo]{}
		m, _ := classOf(&c)
		return m
	}
	g := &Gang{ID: "g", Queue: "a/b", Members: 4, GPUsPerMember: 8, Products: []string{"H100"}}
	changes := []func(*Gang){
		func(g *Gang) { g.Queue = "a/c" },
		func(g *Gang) { g.Products = []string{"H100", "H200"} },
		func(g *Gang) { g.Products[1] = "B200" }, // in place: the same slice
		func(g *Gang) { g.Products = []string{"H100\x00B200"} },
		func(g *Gang) { g.Products = []string{} },
		func(g *Gang) { g.Products = nil },
		func(g *Gang) { g.Products = []string{""} },
		func(g *Gang) { g.Members = 2 },
		func(g *Gang) { g.GPUsPerMember = 1 },
		func(g *Gang) { g.Shared = &SharedRequest{} },
		func(g *Gang) { g.Shared.Strategy = "mps" }, // in place
		func(g *Gang) { g.Shared = nil; g.MIGResource = "nvidia.com/mig-1g.10gb" },
		func(g *Gang) { g.Topology.Required = "rack" },
		func(g *Gang) { g.MaxClusters = 2 },
		func(g *Gang) { g.Policy = Spread },
		func(g *Gang) { g.Pools = []PoolFilter{{Products: []string{"H100"}}} },
		func(g *Gang) { g.Pools = nil },
		func(g *Gang) { g.Tolerations = []corev1.Toleration{{Key: "k"}} },
		func(g *Gang) { g.Tolerations = nil },
		func(g *Gang) { g.ClusterSelector = &metav1.LabelSelector{} },
		func(g *Gang) { g.ClusterSelector = nil },
		func(g *Gang) { g.Clusters = []string{"x"} },
		func(g *Gang) { g.Clusters = nil },
		func(g *Gang) { g.ComputeDomain = true },
		func(g *Gang) { g.ComputeDomain = false },
	}
	for i, change := range changes {
		before, _ := classOf(g)
		if again, _ := classOf(g); again != before {
			t.Fatalf("change %d: the class of an unchanged gang changed", i)
		}
		change(g)
		got, ok := classOf(g)
		if !ok || got != fresh(g) {
			t.Fatalf("change %d: class %+v, want %+v", i, got, fresh(g))
		}
		if got == before {
			t.Fatalf("change %d: the class did not change with the gang", i)
		}
	}
	g.Roles = []Role{{Name: "r", Members: 1, GPUsPerMember: 1}}
	if _, ok := classOf(g); ok {
		t.Fatal("a gang with roles has a class")
	}
}

// TestIDFilterHasNoFalseNegative: every ID added passes the filter; most
// others do not.
func TestIDFilterHasNoFalseNegative(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var f idFilter
	added := map[string]bool{}
	for range 8 {
		id := fmt.Sprintf("s-%06d", rng.IntN(100000))
		f.add(id)
		added[id] = true
	}
	passed := 0
	for i := range 100000 {
		id := fmt.Sprintf("s-%06d", i)
		ok := f.mayHold(id)
		if added[id] && !ok {
			t.Fatalf("%s was added and is refused", id)
		}
		if ok {
			passed++
		}
	}
	if passed > 10000 {
		t.Errorf("%d of 100,000 IDs pass a filter of 8: it filters too little", passed)
	}
}
