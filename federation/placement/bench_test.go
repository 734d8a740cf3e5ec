// SPDX-License-Identifier: Apache-2.0

package placement_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
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

// scaleClusters are the fleet sizes of the scale benchmarks: the first n
// clusters of F-XL (1,000 nodes × 8 GPUs each; 100 is F-XL itself), so
// that the slope from 10 to 100 clusters shows.
var scaleClusters = []int{10, 25, 50, 100}

// occupiedPrefix returns the first n clusters of F-XL, occupied as
// occupied does, with their shapes.
func occupiedPrefix(b *testing.B, n int) (*placement.Snapshot, []sim.ClusterShape) {
	b.Helper()
	shapes := sim.Fleets["F-XL"][:n]
	clusters := make([]inventory.Cluster, 0, n)
	for _, sh := range shapes {
		clusters = append(clusters, sh.Build())
	}
	s := placement.NewSnapshot(clusters, nil)
	sim.Occupy(s, shapes, 0.85, 0.70, 1)
	return s, shapes
}

// BenchmarkPlaceScale times one decision, as BenchmarkPlace does, on 10,
// 25, 50 and 100 clusters of 1,000 nodes (SHOAL_BENCH_XL=1: filling the
// fleets takes a while).
func BenchmarkPlaceScale(b *testing.B) {
	if os.Getenv("SHOAL_BENCH_XL") == "" {
		b.Skip("SHOAL_BENCH_XL=1 runs the scale benchmarks")
	}
	for _, n := range scaleClusters {
		s, _ := occupiedPrefix(b, n)
		for _, gpus := range []int{8, 64, 256, 1024} {
			g := placement.Gang{ID: "bench", Queue: "q", Members: gpus / 8, GPUsPerMember: 8,
				Products: []string{sim.ProductH100}}
			b.Run(fmt.Sprintf("clusters=%d/gpus=%d", n, gpus), func(b *testing.B) {
				var c clocks
				b.ReportAllocs()
				for b.Loop() {
					c.start()
					_, _ = s.Place(g)
					c.stop()
				}
				c.report(b)
			})
		}
	}
}

// BenchmarkScheduleCycleScale times one full scheduling cycle (as
// BenchmarkScheduleCycle, explanations on) over 1,000 and 100,000 pending
// gangs of the workload mix on 10 to 100 occupied clusters of 1,000 nodes,
// and reports p50/p99 over cycles. Each cycle starts from the same
// snapshot: the gangs it placed are released after it, untimed. It runs
// with SHOAL_BENCH_SCALE=1 (a few minutes on 2 cores: generating and
// filling the fleets, and cycles of 100,000 gangs).
func BenchmarkScheduleCycleScale(b *testing.B) {
	if os.Getenv("SHOAL_BENCH_SCALE") == "" {
		b.Skip("SHOAL_BENCH_SCALE=1 runs the scheduling cycle at scale")
	}
	for _, n := range scaleClusters {
		s, shapes := occupiedPrefix(b, n)
		total, _ := s.GPUs()
		var jobs []sim.Job
		for seed := uint64(5); len(jobs) < 100_000; seed++ {
			jobs = append(jobs, sim.Generate(shapes, sim.DefaultWorkload(1, 6*time.Hour, seed))...)
		}
		for _, size := range []int{1_000, 100_000} {
			pending := make([]placement.Gang, 0, size)
			var last time.Time
			for i, j := range jobs[:size] {
				j.Gang.ID = fmt.Sprintf("p%06d", i)
				pending = append(pending, j.Gang)
				if j.Gang.Submitted.After(last) {
					last = j.Gang.Submitted
				}
			}
			in := placement.Input{Now: last.Add(time.Hour), Pending: pending, Queues: sim.Queues(total)}
			b.Run(fmt.Sprintf("clusters=%d/pending=%d", n, size), func(b *testing.B) {
				var c clocks
				placed := 0
				b.ReportAllocs()
				for b.Loop() {
					c.start()
					d := placement.Schedule(s, in)
					c.stop()
					b.StopTimer()
					placed = len(d.Placements)
					for _, p := range d.Placements {
						if _, err := s.Release(p.Gang); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				c.report(b)
				b.ReportMetric(float64(placed), "placed/cycle")
			})
		}
	}
}

// clocks times each operation twice: wall time, as BenchmarkPlace does,
// and the CPU time of the benchmark's thread, which on a machine shared
// with other work leaves out the time the core ran someone else.
type clocks struct {
	wall, cpu []time.Duration
	t0        time.Time
	c0        time.Duration
	locked    bool
}

func (c *clocks) start() {
	if !c.locked {
		runtime.LockOSThread()
		c.locked = true
	}
	c.c0, _ = threadCPU()
	c.t0 = time.Now()
}

func (c *clocks) stop() {
	c.wall = append(c.wall, time.Since(c.t0))
	if t, ok := threadCPU(); ok {
		c.cpu = append(c.cpu, t-c.c0)
	}
}

// report adds p50-ns/p99-ns (wall) and cpu-p50-ns/cpu-p99-ns.
func (c *clocks) report(b *testing.B) {
	if c.locked {
		runtime.UnlockOSThread()
		c.locked = false
	}
	reportPercentiles(b, c.wall)
	if len(c.cpu) > 0 {
		slices.Sort(c.cpu)
		b.ReportMetric(float64(c.cpu[len(c.cpu)/2].Nanoseconds()), "cpu-p50-ns")
		b.ReportMetric(float64(c.cpu[len(c.cpu)*99/100].Nanoseconds()), "cpu-p99-ns")
	}
}
