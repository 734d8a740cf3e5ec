// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// TestSharedMix: the same fractional members on whole GPUs and on GPU
// shares of two shared nodes; shares never double-book, the shared nodes'
// GPUs are all that fractional members take with packing (2×8 of 256), and
// more whole GPUs stay for gangs than without.
func TestSharedMix(t *testing.T) {
	run := func(pack bool) Result {
		cfg := Config{Fleet: "F-S", Workload: DefaultWorkload(0.7, 24*time.Hour, 3),
			Shared: &SharedMix{Running: 32, NodesPerCluster: 2, Replicas: 4, Pack: pack}}
		r, err := Run(cfg, "shoal")
		if err != nil {
			t.Fatal(err)
		}
		if r.DoubleBookings+r.PartialGangs+r.IneligibleNodes+r.RequiredViolations != 0 {
			t.Errorf("pack %v broke rules: %+v", pack, r)
		}
		if r.GPUs != 256 || len(r.DelayP50) == 0 || r.DelayP50[classFractional] < 0 {
			t.Errorf("pack %v: %d GPUs, delays %v", pack, r.GPUs, r.DelayP50)
		}
		return r
	}
	whole, packed := run(false), run(true)
	if math.Abs(packed.FractionalGPUs-16.0/256) > 1e-9 {
		t.Errorf("packed: fractional GPUs %.4f, want the shared nodes' 0.0625", packed.FractionalGPUs)
	}
	if whole.FractionalGPUs <= packed.FractionalGPUs || packed.WholeForGangs <= whole.WholeForGangs {
		t.Errorf("whole GPUs for gangs: %.3f without packing, %.3f with", whole.WholeForGangs, packed.WholeForGangs)
	}
	again := run(true)
	again.WallSeconds, packed.WallSeconds = 0, 0
	if !reflect.DeepEqual(again, packed) {
		t.Error("a shared run is not deterministic")
	}
}

func TestParseSharedMix(t *testing.T) {
	m, err := ParseSharedMix("48:2")
	if err != nil || m.Running != 48 || m.NodesPerCluster != 2 || m.Replicas != 4 {
		t.Errorf("48:2 = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "48", "0:2", "48:0", "48:2:0", "x:2", "1:2:3:4"} {
		if _, err := ParseSharedMix(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
