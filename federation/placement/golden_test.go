// SPDX-License-Identifier: Apache-2.0

package placement_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/federation/sim"
)

// goldenFile holds one SHA-256 per scheduling cycle of goldenScenarios, as
// the engine of commit ddcbc6b (before the cycle's fast paths of issue 17)
// decided them: every placement, preemption (with its reason), reservation
// and wait (with its explanation) must stay byte for byte the same.
// SHOAL_UPDATE_GOLDEN=1 rewrites it.
const goldenFile = "testdata/cycle_golden.txt"

// TestScheduleGolden runs scheduling cycles over occupied sim fleets with
// thousands of pending gangs of the workload mix, varied with cluster
// selectors and lists, product filters, topology rules, spread, several
// clusters, estimates and priorities, under each cycle option the
// simulator's strategies use, explanations on and off, carrying
// reservations and terminating victims from cycle to cycle; and compares
// a digest of each decision with the golden file.
func TestScheduleGolden(t *testing.T) {
	got := goldenScenarios(t)
	if os.Getenv("SHOAL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(goldenFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if len(got) != len(want) {
		t.Fatalf("%d cycles, golden has %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("cycle %s: decision differs from the golden one", got[i][:strings.IndexByte(got[i], ' ')])
		}
	}
}

func goldenScenarios(t *testing.T) []string {
	t.Helper()
	variants := []struct {
		name string
		opts []placement.Option
	}{
		{"default", nil},
		{"terse", []placement.Option{placement.WithoutExplanations(), placement.WithQuality()}},
		{"reclaim", []placement.Option{placement.WithReclaim()}},
		{"no-preemption", []placement.Option{placement.WithPreemption(false, 0)}},
		{"preempt-early", []placement.Option{placement.WithPreemptAfter(10 * time.Minute), placement.WithPreemption(true, 8)}},
		{"fifo", []placement.Option{placement.WithOrder(placement.OrderFIFO), placement.WithStrictOrder(),
			placement.WithReservations(0, 0, 0), placement.WithPreemption(false, 0),
			placement.WithPlaceOptions(placement.FirstFit())}},
		{"topology-blind", []placement.Option{placement.WithPlaceOptions(placement.IgnoreTopology())}},
	}
	var out []string
	placed, preempted, reserved := 0, 0, 0
	reasons := map[placement.Reason]int{}
	defer func() {
		// The mixes must exercise what the fast paths skip or share.
		t.Logf("placed %d, preempted %d, reserved %d, waits %v", placed, preempted, reserved, reasons)
		if placed == 0 || preempted == 0 || reserved == 0 || reasons[placement.ReasonQuota] == 0 ||
			reasons[placement.ReasonInsufficientGPUs] == 0 || reasons[placement.ReasonPreempting] == 0 {
			t.Errorf("golden scenarios too tame")
		}
	}()
	for _, fleet := range []string{"F-S", "F-M"} {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, v := range variants {
				name := fmt.Sprintf("%s/%d/%s", fleet, seed, v.name)
				for k, d := range goldenRun(t, fleet, seed, v.opts) {
					placed, preempted, reserved = placed+len(d.Placements), preempted+len(d.Preemptions), reserved+len(d.Reservations)
					for _, w := range d.Waiting {
						reasons[w.Why.Reason]++
					}
					b, err := json.Marshal(d)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, fmt.Sprintf("%s/%d %x", name, k, sha256.Sum256(b)))
				}
			}
		}
	}
	return out
}

// goldenRun runs four cycles on one occupied fleet and returns their decisions.
func goldenRun(t *testing.T, fleet string, seed uint64, opts []placement.Option) []placement.Decision {
	t.Helper()
	clusters, err := sim.Fleet(fleet)
	if err != nil {
		t.Fatal(err)
	}
	shapes := sim.Fleets[fleet]
	s := placement.NewSnapshot(clusters, nil)
	sim.Occupy(s, shapes, 0.85, 0.70, seed)
	total, _ := s.GPUs()
	names := s.Clusters()
	rng := rand.New(rand.NewPCG(seed, 17))
	var pending []placement.Gang
	var last time.Time
	for i, j := range sim.Generate(shapes, sim.DefaultWorkload(1, 12*time.Hour, seed)) {
		if i == 3000 {
			break
		}
		g := j.Gang
		g.ID = fmt.Sprintf("p%05d", i)
		switch rng.IntN(12) {
		case 0:
			g.Clusters = []string{names[rng.IntN(len(names))]}
		case 1:
			g.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"region": []string{"eu", "us"}[rng.IntN(2)]}}
		case 2:
			g.Estimate = 0
		case 3:
			g.Policy = placement.Spread
		case 4:
			g.MaxClusters = 2
		case 5:
			g.Priority = []int32{placement.PriorityDevelopment, placement.PriorityBatch, placement.PriorityTraining,
				placement.PriorityProduction}[rng.IntN(4)]
		}
		pending = append(pending, g)
		if g.Submitted.After(last) {
			last = g.Submitted
		}
	}
	now := last.Add(time.Hour)
	var res []placement.Reservation
	term := map[string]string{}
	var out []placement.Decision
	for range 4 {
		in := placement.Input{Now: now, Pending: pending, Queues: sim.Queues(total), Reservations: res, Terminating: term,
			Usage: map[string]float64{"research/nlp": float64(total) / 10, "product/ads": float64(total) / 20}}
		d := placement.Schedule(s, in, opts...)
		out = append(out, d)
		placed := map[string]bool{}
		for _, p := range d.Placements {
			placed[p.Gang] = true
		}
		var still []placement.Gang
		for _, g := range pending {
			if !placed[g.ID] {
				still = append(still, g)
			}
		}
		pending = still
		for _, p := range d.Preemptions {
			term[p.Victim] = p.Preemptor
		}
		// Some victims leave, and some running gangs end.
		for _, v := range slices.Sorted(maps.Keys(term)) {
			if rng.IntN(2) == 0 {
				if _, err := s.Release(v); err != nil {
					t.Fatal(err)
				}
				delete(term, v)
			}
		}
		for _, a := range s.Running() {
			if _, ok := term[a.Gang.ID]; !ok && rng.IntN(8) == 0 {
				if _, err := s.Release(a.Gang.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		res = d.Reservations
		now = now.Add(20 * time.Minute)
	}
	return out
}
