// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"math/bits"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
)

func TestFleetSizes(t *testing.T) {
	tests := []struct {
		fleet          string
		clusters, gpus int
	}{
		{"F-S", 1, 256}, {"F-M", 4, 3*128*8 + 14*18*4}, {"F-L", 8, 65536},
	}
	for _, tt := range tests {
		cs, err := Fleet(tt.fleet)
		if err != nil {
			t.Fatal(err)
		}
		gpus := 0
		for _, c := range cs {
			for _, n := range c.Nodes {
				gpus += n.GPUs
			}
		}
		if len(cs) != tt.clusters || gpus != tt.gpus {
			t.Errorf("%s: %d clusters, %d GPUs; want %d, %d", tt.fleet, len(cs), gpus, tt.clusters, tt.gpus)
		}
	}
	if _, err := Fleet("F-nope"); err == nil {
		t.Error("unknown fleet accepted")
	}
}

func TestGenerateMatchesTheMix(t *testing.T) {
	w := DefaultWorkload(0.9, 14*24*time.Hour, 5)
	jobs := Generate(Fleets["F-M"], w)
	gpus := fleetGPUs(Fleets["F-M"])
	work, required, preferred := 0.0, 0, 0
	for i, j := range jobs {
		g := j.Gang
		if bits.OnesCount(uint(g.GPUs())) != 1 || g.GPUs() > 512 {
			t.Fatalf("gang %s has %d GPUs", g.ID, g.GPUs())
		}
		if i > 0 && j.Arrival < jobs[i-1].Arrival {
			t.Fatal("jobs out of arrival order")
		}
		work += float64(g.GPUs()) * j.Duration.Hours()
		if g.Topology.Required != "" {
			required++
		}
		if g.Topology.Preferred != "" {
			preferred++
		}
	}
	rho := work / (float64(gpus) * w.Horizon.Hours())
	if rho < 0.85 || rho > 0.95 {
		t.Errorf("offered load %.3f, want about 0.9", rho)
	}
	share := func(n int) float64 { return float64(n) / float64(len(jobs)) }
	if s := share(required); s < 0.17 || s > 0.23 {
		t.Errorf("required share %.3f", s)
	}
	if s := share(preferred); s < 0.36 || s > 0.44 {
		t.Errorf("preferred share %.3f", s)
	}
}

func shortRun(t *testing.T, strategy string) Result {
	t.Helper()
	horizon := 72 * time.Hour
	if testing.Short() {
		horizon = 24 * time.Hour
	}
	r, err := Run(Config{Fleet: "F-S", Workload: DefaultWorkload(0.9, horizon, 11), NodeFailuresPerDay: 0.05}, strategy)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunKeepsTheRules(t *testing.T) {
	for _, s := range StrategyNames {
		t.Run(s, func(t *testing.T) {
			r := shortRun(t, s)
			if r.Started == 0 || r.Allocation <= 0.3 {
				t.Fatalf("nothing ran: %+v", r)
			}
			if r.PartialGangs != 0 || r.DoubleBookings != 0 || r.IneligibleNodes != 0 {
				t.Errorf("broken rules: partial %d, double %d, ineligible %d", r.PartialGangs, r.DoubleBookings, r.IneligibleNodes)
			}
			topologyAware := s == "shoal" || s == "fifo-first-fit" || s == "one-cluster-per-job"
			if topologyAware && r.RequiredViolations != 0 {
				t.Errorf("%d required constraints broken", r.RequiredViolations)
			}
			if s == "shoal" && (r.NVLinkMinShare < 0.95 || r.RackMinShare < 0.95) {
				t.Errorf("shoal placed %.3f / %.3f of gangs in the fewest NVLink domains / racks", r.NVLinkMinShare, r.RackMinShare)
			}
		})
	}
}

func TestRunIsDeterministic(t *testing.T) {
	a, b := shortRun(t, "shoal"), shortRun(t, "shoal")
	a.WallSeconds, b.WallSeconds = 0, 0
	if a.Allocation != b.Allocation || a.Started != b.Started || a.Preemptions != b.Preemptions ||
		a.PreemptionGPUHoursLost != b.PreemptionGPUHoursLost || a.Jain != b.Jain {
		t.Errorf("same seed, different runs:\n%+v\n%+v", a, b)
	}
}

func TestCheckerCatchesBrokenRules(t *testing.T) {
	cs, _ := Fleet("F-S")
	c := newChecker(cs)
	g := placement.Gang{ID: "a", Members: 2, GPUsPerMember: 8, Topology: placement.Topology{Required: "rack"}}
	c.start(g, placement.Placement{Assignments: []placement.Assignment{
		{Cluster: "s1", Node: "s1-n00000", Members: 1}, {Cluster: "s1", Node: "s1-n00031", Members: 1}}})
	if c.required != 1 {
		t.Errorf("required = %d, want 1 (nodes in different racks)", c.required)
	}
	c.start(placement.Gang{ID: "b", Members: 2, GPUsPerMember: 8}, placement.Placement{Assignments: []placement.Assignment{
		{Cluster: "s1", Node: "s1-n00000", Members: 1}}})
	if c.double != 1 || c.partial != 1 {
		t.Errorf("double = %d, partial = %d; want 1, 1", c.double, c.partial)
	}
	c.stop("b")
	c.stop("a")
	if n := c.nodes["s1/s1-n00000"]; n.used != 0 {
		t.Errorf("used = %d after stop", n.used)
	}
}
