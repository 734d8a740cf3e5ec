// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"sort"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// Strategy makes one scheduling cycle's decision; placements it returns are
// already booked in the snapshot.
type Strategy interface {
	Decide(s *placement.Snapshot, in placement.Input) placement.Decision
}

// StrategyNames lists the strategies a run compares: Shoal first, then the
// baselines. NewStrategy also knows Shoal variants for ablations:
// shoal-no-preemption, shoal-no-reservations, shoal-plain (neither),
// shoal-reclaim and shoal-preempt-after-10m.
var StrategyNames = []string{"shoal", "shoal-topology-off", "fifo-first-fit", "summed-capacity", "one-cluster-per-job"}

// NewStrategy returns a fresh strategy by name.
func NewStrategy(name string) (Strategy, bool) {
	base := []placement.Option{placement.WithQuality(), placement.WithoutExplanations()}
	switch name {
	case "shoal":
		return scheduleWith(base), true
	case "shoal-topology-off":
		return scheduleWith(append(base, placement.WithPlaceOptions(placement.IgnoreTopology()))), true
	case "fifo-first-fit":
		return scheduleWith(append(base, placement.WithOrder(placement.OrderFIFO), placement.WithStrictOrder(),
			placement.WithReservations(0, 0, 0), placement.WithPreemption(false, 0),
			placement.WithPlaceOptions(placement.FirstFit()))), true
	case "shoal-no-preemption":
		return scheduleWith(append(base, placement.WithPreemption(false, 0))), true
	case "shoal-reclaim":
		return scheduleWith(append(base, placement.WithReclaim())), true
	case "shoal-preempt-after-10m":
		return scheduleWith(append(base, placement.WithPreemptAfter(10*time.Minute))), true
	case "shoal-no-reservations":
		return scheduleWith(append(base, placement.WithReservations(0, 0, 0))), true
	case "shoal-plain":
		return scheduleWith(append(base, placement.WithPreemption(false, 0), placement.WithReservations(0, 0, 0))), true
	case "summed-capacity":
		return &summed{bound: map[string]string{}}, true
	case "one-cluster-per-job":
		return oneCluster{}, true
	}
	return nil, false
}

type scheduleWith []placement.Option

func (o scheduleWith) Decide(s *placement.Snapshot, in placement.Input) placement.Decision {
	return placement.Schedule(s, in, o...)
}

// byPriorityThenAge orders gangs like a per-cluster queue: priority, then age.
func byPriorityThenAge(gs []placement.Gang) []placement.Gang {
	out := append([]placement.Gang(nil), gs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].Submitted.Before(out[j].Submitted)
	})
	return out
}

// summed models a hub that sees each cluster as one summed GPU count (one
// virtual node per cluster): it binds a gang to the first cluster whose sum
// covers it; the cluster's own topology-blind scheduler then places the
// members when they fit exactly, and until then the gang holds its share of
// the sum and waits there.
type summed struct{ bound map[string]string }

func (st *summed) Decide(s *placement.Snapshot, in placement.Input) placement.Decision {
	var d placement.Decision
	free := s.FreeByCluster()
	clusters := s.Clusters()
	promised := map[string]int{}
	for _, g := range in.Pending {
		if c, ok := st.bound[g.ID]; ok {
			promised[c] += g.GPUs()
		}
	}
	for _, g := range byPriorityThenAge(in.Pending) {
		c, ok := st.bound[g.ID]
		if !ok {
			for _, cand := range clusters {
				if sumFor(free[cand], g.Products)-promised[cand] >= g.GPUs() && allowed(g, cand) {
					c, ok = cand, true
					st.bound[g.ID] = c
					promised[c] += g.GPUs()
					break
				}
			}
		}
		if !ok {
			continue
		}
		local := g
		local.Clusters, local.MaxClusters = []string{c}, 1
		if p, placed := placeLocal(s, in.Now, g, local, placement.IgnoreTopology(), placement.FirstFit()); placed {
			d.Placements = append(d.Placements, p)
			delete(st.bound, g.ID)
			promised[c] -= g.GPUs()
			free = s.FreeByCluster()
		}
	}
	return d
}

// oneCluster models MultiKueue-style dispatch: each gang goes whole to the
// first cluster (in name order) whose own scheduler admits it now, placed
// first-fit at its required level; gangs never span clusters.
type oneCluster struct{}

func (oneCluster) Decide(s *placement.Snapshot, in placement.Input) placement.Decision {
	var d placement.Decision
	for _, g := range byPriorityThenAge(in.Pending) {
		for _, c := range s.Clusters() {
			local := g
			local.Clusters, local.MaxClusters = []string{c}, 1
			if p, ok := placeLocal(s, in.Now, g, local, placement.FirstFit()); ok {
				d.Placements = append(d.Placements, p)
				break
			}
		}
	}
	return d
}

// placeLocal places the restricted gang and books it, scoring it against
// the fewest domains the unrestricted gang could have used.
func placeLocal(s *placement.Snapshot, now time.Time, g, local placement.Gang, opts ...placement.PlaceOption) (placement.Placement, bool) {
	p, err := s.Place(local, opts...)
	if err != nil {
		return p, false
	}
	p.Quality = &placement.Quality{
		NVLinkDomains: s.DomainsUsed(p, inventory.LevelNVLink), MinNVLinkDomains: s.MinDomains(g, inventory.LevelNVLink),
		Racks: s.DomainsUsed(p, inventory.LevelRack), MinRacks: s.MinDomains(g, inventory.LevelRack),
	}
	if s.Assume(local, p, now) != nil {
		return p, false
	}
	return p, true
}

func sumFor(free map[string]int, products []string) int {
	t := 0
	for p, f := range free {
		if len(products) == 0 || contains(products, p) {
			t += f
		}
	}
	return t
}

func allowed(g placement.Gang, c string) bool {
	return len(g.Clusters) == 0 || contains(g.Clusters, c)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
