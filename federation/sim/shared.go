// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// SharedMix adds fractional members to a generated run: small inference
// servers that need a fraction of a GPU, one member each, arriving beside
// the gangs of the workload (docs/shared-gpus.md).
type SharedMix struct {
	// Running is the mean number of fractional members running at once;
	// with the workload's running times it sets their arrival rate.
	Running float64
	// Pack makes them ask for one share of a shared GPU, on the last
	// NodesPerCluster nodes of each cluster, whose GPUs are time-sliced
	// Replicas times (the device plugin's sharing config with
	// renameByDefault). Without it (today), each asks for one whole GPU
	// and every node is a whole-GPU node.
	Pack            bool
	NodesPerCluster int
	Replicas        int // default 4
}

// fractionalPrefix starts the IDs of fractional members.
const fractionalPrefix = "frac-"

// classFractional is the delay class of fractional members.
const classFractional = "fractional"

func (m *SharedMix) replicas() int { return max(1, m.Replicas) }

// isFractional reports whether a gang is a fractional member of a SharedMix.
func isFractional(g *placement.Gang) bool {
	return len(g.ID) > len(fractionalPrefix) && g.ID[:len(fractionalPrefix)] == fractionalPrefix
}

// wholeGPUs is the whole GPUs a job holds while it runs: none for a member
// on GPU shares.
func (js *jobState) wholeGPUs() int {
	if js.Gang.Shared != nil {
		return 0
	}
	return js.Gang.GPUs()
}

// shareNodes makes the last NodesPerCluster nodes of each cluster shared
// GPUs and returns their physical GPUs.
func (m *SharedMix) shareNodes(clusters []inventory.Cluster) int {
	physical := 0
	for ci := range clusters {
		ns := clusters[ci].Nodes
		for i := max(0, len(ns)-m.NodesPerCluster); i < len(ns); i++ {
			n := &ns[i]
			n.Shared = &inventory.SharedGPUs{Strategy: inventory.SharingTimeSlicing, Replicas: m.replicas(),
				Resource: inventory.ResourceGPUShared, GPUs: n.GPUs, Allocatable: n.GPUs * m.replicas()}
			physical += n.GPUs
			n.GPUs, n.CapacityGPUs = 0, 0
		}
	}
	return physical
}

// fractional draws the fractional members of a run, in arrival order: one
// member of one share (Pack) or one whole GPU, production priority, any
// product, with the workload's running times.
func (m *SharedMix) fractional(w Workload) []Job {
	rng := rand.New(rand.NewPCG(w.Seed, 0xf2ac))
	mean := 0.0
	for range 10000 {
		mean += drawDuration(rng, w).Seconds() / 10000
	}
	rate := m.Running / mean
	var out []Job
	for t, i := rng.ExpFloat64()/rate, 0; t < w.Horizon.Seconds(); t, i = t+rng.ExpFloat64()/rate, i+1 {
		at := time.Duration(t * float64(time.Second))
		d := drawDuration(rng, w)
		g := placement.Gang{ID: fmt.Sprintf("%s%06d", fractionalPrefix, i), Queue: "product/search/rank",
			Members: 1, GPUsPerMember: 1, Priority: placement.PriorityProduction, Policy: placement.BinPack,
			Submitted: epoch.Add(at), GracePeriod: 5 * time.Minute, Estimate: d}
		if m.Pack {
			g.Shared = &placement.SharedRequest{}
		}
		out = append(out, Job{Gang: g, Arrival: at, Duration: d})
	}
	return out
}

// withFractional merges the fractional members into the jobs by arrival.
func withFractional(jobs, frac []Job) []Job {
	out := append(append(make([]Job, 0, len(jobs)+len(frac)), jobs...), frac...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Arrival < out[j].Arrival })
	return out
}

// ParseSharedMix reads -shared's RUNNING:NODES[:REPLICAS] (48:2:4: 48
// fractional members running on average, 2 shared nodes per cluster of 4
// shares per GPU with packing).
func ParseSharedMix(s string) (SharedMix, error) {
	var m SharedMix
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return m, fmt.Errorf("-shared %q: want RUNNING:NODES[:REPLICAS]", s)
	}
	var err error
	if m.Running, err = strconv.ParseFloat(parts[0], 64); err != nil || m.Running <= 0 {
		return m, fmt.Errorf("-shared %q: running must be a positive number", s)
	}
	if m.NodesPerCluster, err = strconv.Atoi(parts[1]); err != nil || m.NodesPerCluster < 1 {
		return m, fmt.Errorf("-shared %q: nodes must be a positive integer", s)
	}
	m.Replicas = 4
	if len(parts) == 3 {
		if m.Replicas, err = strconv.Atoi(parts[2]); err != nil || m.Replicas < 1 {
			return m, fmt.Errorf("-shared %q: replicas must be a positive integer", s)
		}
	}
	return m, nil
}

// PrintSharedTable writes the shared-GPU figures of runs with a SharedMix.
func PrintSharedTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fleet\tload\tstrategy\tGPUs to fractional\twhole GPUs for gangs\tgang alloc\tgoodput\tfrac p50\tfrac p99\tp99 1-8\tp99 128-256\tpreempt GPU-h\tdouble\tpending\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n",
			r.Fleet, r.Load, r.Strategy, r.FractionalGPUs, r.WholeForGangs, r.GangAllocation, r.Goodput,
			r.DelayP50[classFractional], r.DelayP99[classFractional], r.DelayP99["1-8"], r.DelayP99["128-256"],
			r.PreemptionGPUHoursLost, r.DoubleBookings, r.PendingAtEnd)
	}
	_ = tw.Flush()
}
