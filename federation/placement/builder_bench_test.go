// SPDX-License-Identifier: Apache-2.0

package placement_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/federation/sim"
)

// BenchmarkBuilderFXL times one Builder build of F-XL (100 clusters ×
// 1,000 nodes of 8 GPUs) with 25,000 running gangs of 4 × 8 GPUs, as a
// hub's scheduling cycle builds it: between builds 10 clusters report
// anew (20 nodes' usage changed in each) and a cycle of 20 gangs is run on
// the last build (untimed), changing its counts. It reports p50/p99 of the
// build (SHOAL_BENCH_SCALE=1).
//
//	SHOAL_BENCH_SCALE=1 go test ./federation/placement -run '^$' -bench BuilderFXL -benchtime 50x
func BenchmarkBuilderFXL(b *testing.B) {
	if os.Getenv("SHOAL_BENCH_SCALE") == "" {
		b.Skip("F-XL: set SHOAL_BENCH_SCALE=1")
	}
	fleet, err := sim.Fleet("F-XL")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gang := func(id string) placement.Gang {
		return placement.Gang{ID: id, Queue: "q", Members: 4, GPUsPerMember: 8, Products: []string{sim.ProductH100}, Submitted: now}
	}
	var pending []placement.Gang
	for i := range 25_000 {
		pending = append(pending, gang(fmt.Sprintf("run-%05d", i)))
	}
	var running []*placement.Allocation
	for _, p := range placement.Schedule(placement.NewSnapshot(fleet, nil), placement.Input{Now: now, Pending: pending}).Placements {
		running = append(running, &placement.Allocation{Gang: gang(p.Gang), Assignments: p.Assignments, Started: now})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var bld placement.Builder
	bld.Snapshot(fleet, running)
	var c clocks
	step := 0
	for b.Loop() {
		b.StopTimer()
		fleet = slices.Clone(fleet)
		for range 10 {
			ci := rng.IntN(len(fleet))
			nodes := slices.Clone(fleet[ci].Nodes)
			for range 20 {
				n := &nodes[rng.IntN(len(nodes))]
				n.UsedGPUs = rng.IntN(n.GPUs + 1)
			}
			fleet[ci].Nodes = nodes
		}
		b.StartTimer()
		c.start()
		s := bld.Snapshot(fleet, running)
		c.stop()
		b.StopTimer()
		var more []placement.Gang
		for i := range 20 {
			more = append(more, gang(fmt.Sprintf("more-%d-%d", step, i)))
		}
		placement.Schedule(s, placement.Input{Now: now, Pending: more})
		step++
		b.StartTimer()
	}
	c.report(b)
	b.ReportMetric(float64(len(running)), "running")
}
