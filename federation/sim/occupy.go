// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
)

// Occupy fills a snapshot with gangs from the workload mix until about fill
// of its GPUs are taken, then ends a random share of them so that free GPUs
// are scattered the way departures scatter them, leaving about target
// taken. It is how benchmarks get "realistic occupancy".
func Occupy(s *placement.Snapshot, shapes []ClusterShape, fill, target float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x0cc))
	choices := productChoices(shapes)
	total, _ := s.GPUs()
	misses := 0
	used := 0
	for i := 0; float64(used) < fill*float64(total) && misses < 200; i++ {
		j := newJob(rng, DefaultWorkload(1, time.Hour, seed), i, 0, 256, choices, len(shapes) > 1)
		j.Gang.ID = fmt.Sprintf("occ%06d", i)
		p, err := s.Place(j.Gang)
		if err != nil {
			misses++
			continue
		}
		if s.Assume(j.Gang, p, time.Unix(0, 0)) == nil {
			used += j.Gang.GPUs()
		}
	}
	for _, a := range s.Running() {
		if float64(used) <= target*float64(total) {
			break
		}
		if rng.Float64() < 0.5 {
			if _, err := s.Release(a.Gang.ID); err == nil {
				used -= a.Gang.GPUs()
			}
		}
	}
}
