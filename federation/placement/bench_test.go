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

// occupied returns a fleet's snapshot with realistic occupancy: filled to
// 85% with the workload mix, then thinned to 70% by random departures.
func occupied(b *testing.B, fleet string) *placement.Snapshot {
	b.Helper()
	clusters, err := sim.Fleet(fleet)
	if err != nil {
		b.Fatal(err)
	}
	s := placement.NewSnapshot(clusters, nil)
	sim.Occupy(s, sim.Fleets[fleet], 0.85, 0.70, 1)
	return s
}

// BenchmarkPlace times one decision for a gang of 8, 64, 256 and 1,024 GPUs
// (members of 8 H100 GPUs, no topology rule: the engine still searches from
// the tightest level up) and reports p50/p99 besides the mean.
//
// F-XL (100 clusters, 800,000 GPUs) joins with SHOAL_BENCH_XL=1; filling it
// takes a while.
func BenchmarkPlace(b *testing.B) {
	fleets := []string{"F-M", "F-L"}
	if os.Getenv("SHOAL_BENCH_XL") != "" {
		fleets = append(fleets, "F-XL")
	}
	for _, fleet := range fleets {
		s := occupied(b, fleet)
		for _, gpus := range []int{8, 64, 256, 1024} {
			g := placement.Gang{ID: "bench", Queue: "q", Members: gpus / 8, GPUsPerMember: 8,
				Products: []string{sim.ProductH100}}
			b.Run(fmt.Sprintf("%s/gpus=%d", fleet, gpus), func(b *testing.B) {
				times := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				for b.Loop() {
					t := time.Now()
					_, _ = s.Place(g)
					times = append(times, time.Since(t))
				}
				reportPercentiles(b, times)
			})
		}
	}
}

func reportPercentiles(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkThroughput places a stream of gangs from the workload mix on an
// occupied fleet, booking each and ending the oldest to hold occupancy,
// and reports member placements per second on one goroutine.
func BenchmarkThroughput(b *testing.B) {
	for _, fleet := range []string{"F-M", "F-L"} {
		b.Run(fleet, func(b *testing.B) {
			s := occupied(b, fleet)
			jobs := sim.Generate(sim.Fleets[fleet], sim.DefaultWorkload(1, 24*time.Hour, 3))
			rng := rand.New(rand.NewPCG(3, 3))
			var live []string
			members, placed := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				j := jobs[i%len(jobs)]
				j.Gang.ID = fmt.Sprintf("t%d", i)
				p, err := s.Place(j.Gang)
				if err == nil && s.Assume(j.Gang, p, time.Time{}) == nil {
					members += j.Gang.Members
					placed++
					live = append(live, j.Gang.ID)
				}
				for len(live) > 0 && (err != nil || rng.IntN(2) == 0) {
					_, _ = s.Release(live[0])
					live = live[1:]
					err = nil
				}
			}
			b.ReportMetric(float64(members)/b.Elapsed().Seconds(), "members/s")
			b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "gangs/s")
		})
	}
}

// BenchmarkScheduleCycle times one full scheduling cycle (fair-share order,
// quotas, reservations, preemption) over 500 pending gangs from the
// workload mix on an occupied fleet.
func BenchmarkScheduleCycle(b *testing.B) {
	for _, fleet := range []string{"F-M", "F-L"} {
		b.Run(fleet, func(b *testing.B) {
			clusters, err := sim.Fleet(fleet)
			if err != nil {
				b.Fatal(err)
			}
			jobs := sim.Generate(sim.Fleets[fleet], sim.DefaultWorkload(1, 24*time.Hour, 5))
			pending := make([]placement.Gang, 0, 500)
			for _, j := range jobs[:min(500, len(jobs))] {
				pending = append(pending, j.Gang)
			}
			total := 0
			for _, c := range clusters {
				for _, n := range c.Nodes {
					total += n.GPUs
				}
			}
			in := placement.Input{Now: time.Unix(0, 0).Add(time.Hour), Pending: pending, Queues: sim.Queues(total)}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				s := placement.NewSnapshot(clusters, nil)
				sim.Occupy(s, sim.Fleets[fleet], 0.85, 0.70, 1)
				b.StartTimer()
				placement.Schedule(s, in)
			}
		})
	}
}
