// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// TestGPUViewCountsAtMostEverySecond: the fleet's GPUs are counted on the
// first cycle, kept by a cycle less than a second after the count, and
// counted again a second after it (or when the clock went back).
func TestGPUViewCountsAtMostEverySecond(t *testing.T) {
	empty := &fleet{}
	one := &fleet{clusters: []inventory.Cluster{{Name: "eu1", Nodes: []inventory.Node{
		{Name: "a", Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, CapacityGPUs: 8, Ready: true}}}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var g gpuView
	count := func(f *fleet, at time.Duration) int {
		total := 0
		for _, n := range g.of(f, placement.NewSnapshot(f.clusters, nil), nil, t0.Add(at)) {
			total += n
		}
		return total
	}
	for _, c := range []struct {
		f    *fleet
		at   time.Duration
		want int
	}{
		{empty, 0, 0},
		{one, 999 * time.Millisecond, 0}, // kept
		{one, time.Second, 8},            // counted again
		{empty, 1500 * time.Millisecond, 8},
		{empty, 500 * time.Millisecond, 0}, // the clock went back
	} {
		if got := count(c.f, c.at); got != c.want {
			t.Fatalf("at +%v: %d GPUs, want %d", c.at, got, c.want)
		}
	}
}
