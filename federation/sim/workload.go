// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// Job is one generated gang with its arrival time and running time.
type Job struct {
	Gang     placement.Gang
	Arrival  time.Duration // since the start of the run
	Duration time.Duration // running time without interruptions
}

// Workload configures the synthetic job mix. The shape follows what the
// Philly, Helios and Alibaba PAI papers publish (the traces themselves are
// not available here): power-of-two gang sizes where most jobs are small
// but most GPU-hours go to big gangs, log-normal running times.
type Workload struct {
	// Load is the offered load ρ = Σ(gpus·duration) / (fleet GPUs · horizon).
	Load float64
	// Horizon is how long jobs keep arriving.
	Horizon time.Duration
	// Seed makes the run reproducible.
	Seed uint64
	// MedianDuration and Sigma shape the log-normal running time; MaxDuration caps it.
	MedianDuration time.Duration
	Sigma          float64
	MaxDuration    time.Duration
	// RequiredShare and PreferredShare are the fractions of gangs with a
	// required or a preferred topology level.
	RequiredShare, PreferredShare float64
}

// DefaultWorkload returns the mix of docs/benchmarks.md at a load.
func DefaultWorkload(load float64, horizon time.Duration, seed uint64) Workload {
	return Workload{Load: load, Horizon: horizon, Seed: seed, MedianDuration: 30 * time.Minute, Sigma: 1.4,
		MaxDuration: 24 * time.Hour, RequiredShare: 0.2, PreferredShare: 0.4}
}

// sizeWeights is P(gang = 2^k GPUs), k = 0…10, before truncation.
var sizeWeights = []float64{0.40, 0.12, 0.12, 0.14, 0.08, 0.05, 0.04, 0.025, 0.015, 0.008, 0.004}

// LeafQueue is a leaf of the generated queue tree with its share of arrivals.
type LeafQueue struct {
	Name  string
	Share float64
}

// Leaves are the generated workload's leaf queues (org/team/project).
var Leaves = []LeafQueue{
	{"research/nlp/llm", 0.25}, {"research/nlp/speech", 0.10}, {"research/vision/gen", 0.15},
	{"product/search/rank", 0.20}, {"product/ads/ctr", 0.15}, {"platform/infra/eval", 0.15},
}

// Queues returns the three-level queue tree: weights per org and team and
// nominal quotas by org in proportion to the weights (borrowing unlimited).
func Queues(fleetGPUs int) []placement.Queue {
	nominal := func(f float64) map[string]placement.Quota {
		return map[string]placement.Quota{"": {Nominal: int(f * float64(fleetGPUs))}}
	}
	return []placement.Queue{
		{Name: "research", Weight: 3, Quotas: nominal(0.5)},
		{Name: "research/nlp", Weight: 2}, {Name: "research/vision", Weight: 1},
		{Name: "product", Weight: 2, Quotas: nominal(1.0 / 3)},
		{Name: "product/search", Weight: 1}, {Name: "product/ads", Weight: 1},
		{Name: "platform", Weight: 1, Quotas: nominal(1.0 / 6)},
		{Name: "platform/infra", Weight: 1},
	}
}

// productShape is what a gang restricted to some products can get.
type productShape struct {
	products                 []string
	gpn, clique, rack, block int // GPUs per node, NVLink domain, rack, block
	cluster                  int // GPUs of the largest cluster
}

// Generate draws the jobs of a run over the fleet, in arrival order.
func Generate(shapes []ClusterShape, w Workload) []Job {
	choices := productChoices(shapes)
	maxSize := 1024
	largest := 0
	for _, c := range choices {
		largest = max(largest, c.cluster)
	}
	for maxSize > largest/2 {
		maxSize /= 2
	}
	rng := rand.New(rand.NewPCG(w.Seed, 0x5eed))
	mean := meanWork(w, maxSize)
	rate := w.Load * float64(fleetGPUs(shapes)) / mean // arrivals per second
	var jobs []Job
	work := 0.0
	t := 0.0
	for i := 0; ; i++ {
		t += rng.ExpFloat64() / rate
		if t >= 1.5*w.Horizon.Seconds() {
			break
		}
		j := newJob(rng, w, i, t, maxSize, choices, len(shapes) > 1)
		jobs = append(jobs, j)
		if t < w.Horizon.Seconds() {
			work += float64(j.Gang.GPUs()) * j.Duration.Seconds()
		}
	}
	// Heavy tails make the drawn load stray from the target on small
	// fleets; stretch the arrival times so that it comes out at ρ.
	scale := work / (w.Load * float64(fleetGPUs(shapes)) * w.Horizon.Seconds())
	out := jobs[:0]
	for _, j := range jobs {
		j.Arrival = time.Duration(float64(j.Arrival) * scale)
		j.Gang.Submitted = time.Unix(0, 0).UTC().Add(j.Arrival)
		if j.Arrival < w.Horizon {
			out = append(out, j)
		}
	}
	return out
}

// meanWork estimates E[gpus·duration] in GPU-seconds with a fixed stream.
func meanWork(w Workload, maxSize int) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	sum := 0.0
	const n = 50000
	for range n {
		sum += float64(drawSize(rng, maxSize)) * drawDuration(rng, w).Seconds()
	}
	return sum / n
}

func drawSize(rng *rand.Rand, maxSize int) int {
	total := 0.0
	for k, p := range sizeWeights {
		if 1<<k <= maxSize {
			total += p
		}
	}
	x := rng.Float64() * total
	for k, p := range sizeWeights {
		if 1<<k > maxSize {
			break
		}
		if x -= p; x < 0 {
			return 1 << k
		}
	}
	return 1
}

func drawDuration(rng *rand.Rand, w Workload) time.Duration {
	d := time.Duration(float64(w.MedianDuration) * math.Exp(w.Sigma*rng.NormFloat64()))
	return min(max(d, time.Minute), w.MaxDuration)
}

func newJob(rng *rand.Rand, w Workload, i int, at float64, maxSize int, choices []productShape, multi bool) Job {
	size := drawSize(rng, maxSize)
	ps := choices[pickWeighted(rng, len(choices))]
	for size > ps.cluster/2 && size > 1 {
		size /= 2
	}
	gpm := min(size, ps.gpn)
	g := placement.Gang{
		ID: fmt.Sprintf("j%06d", i), Queue: pickQueue(rng), Members: size / gpm, GPUsPerMember: gpm,
		Products: ps.products, Submitted: time.Unix(0, 0).UTC().Add(time.Duration(at * float64(time.Second))),
		GracePeriod: 5 * time.Minute, Policy: placement.BinPack,
	}
	switch x := rng.Float64(); {
	case x < 0.15:
		g.Priority = placement.PriorityProduction
	case x < 0.65:
		g.Priority, g.Preemptible = placement.PriorityBatch, true
	default:
		g.Priority, g.Preemptible = placement.PriorityDevelopment, true
	}
	tight := ps.tightest(size)
	switch x := rng.Float64(); {
	case x < w.RequiredShare:
		if rng.IntN(2) == 0 && tight < inventory.LevelCluster {
			tight = inventory.Levels[tight.Rank()+1]
		}
		g.Topology.Required = tight
	case x < w.RequiredShare+w.PreferredShare:
		g.Topology.Preferred = tight
	default:
		if multi && size >= 256 && rng.IntN(10) == 0 {
			g.MaxClusters = 2
		}
	}
	d := drawDuration(rng, w)
	// Users state time limits above the real running time.
	g.Estimate = time.Duration(float64(d) * (1 + rng.Float64()))
	return Job{Gang: g, Arrival: time.Duration(at * float64(time.Second)), Duration: d}
}

// tightest returns the tightest level whose domains can hold size GPUs.
func (p productShape) tightest(size int) inventory.Level {
	switch {
	case size <= p.gpn:
		return inventory.LevelNode
	case size <= p.clique:
		return inventory.LevelNVLink
	case size <= p.rack:
		return inventory.LevelRack
	case size <= p.block:
		return inventory.LevelBlock
	}
	return inventory.LevelCluster
}

// productChoices lists the product restrictions gangs draw from: each
// product alone, and any product (gpn of the smallest node) on mixed fleets.
func productChoices(shapes []ClusterShape) []productShape {
	byProduct := map[string]*productShape{}
	var order []string
	anyShape := productShape{gpn: math.MaxInt32, clique: math.MaxInt32, rack: math.MaxInt32, block: math.MaxInt32}
	for _, s := range shapes {
		p, ok := byProduct[s.Product]
		if !ok {
			p = &productShape{products: []string{s.Product}, gpn: s.GPUsPerNode, clique: s.GPUsPerNode}
			byProduct[s.Product] = p
			order = append(order, s.Product)
		}
		rack := s.GPUsPerNode * s.NodesPerRack
		block := rack * max(1, s.RacksPerBlock)
		if s.CliquePerRack {
			p.clique = rack
		}
		p.rack, p.block = max(p.rack, rack), max(p.block, block)
		p.cluster = max(p.cluster, s.GPUsPerNode*s.Nodes)
	}
	out := make([]productShape, 0, len(order)+1)
	for _, n := range order {
		p := *byProduct[n]
		out = append(out, p)
		anyShape.gpn = min(anyShape.gpn, p.gpn)
		anyShape.clique = min(anyShape.clique, p.clique)
		anyShape.rack = min(anyShape.rack, p.rack)
		anyShape.block = min(anyShape.block, p.block)
		anyShape.cluster = max(anyShape.cluster, p.cluster)
	}
	if len(out) > 1 {
		out = append(out, anyShape)
	}
	return out
}

// pickWeighted picks among n choices: on mixed fleets the last (any
// product) gets a quarter, the first half, the rest share what is left.
func pickWeighted(rng *rand.Rand, n int) int {
	if n == 1 {
		return 0
	}
	x := rng.Float64()
	switch {
	case x < 0.5:
		return 0
	case x < 0.75:
		return n - 1
	}
	return 1 + rng.IntN(n-2)
}

func pickQueue(rng *rand.Rand) string {
	x := rng.Float64()
	for _, l := range Leaves {
		if x -= l.Share; x < 0 {
			return l.Name
		}
	}
	return Leaves[len(Leaves)-1].Name
}
