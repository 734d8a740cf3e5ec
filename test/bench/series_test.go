// SPDX-License-Identifier: Apache-2.0

package bench

import "testing"

// TestSeriesOfDocumentedFleets keeps Series and the figures of
// docs/metrics.md, "Number of series", in step.
func TestSeriesOfDocumentedFleets(t *testing.T) {
	fleet100 := Series(Fleet100())
	for fam, want := range map[string]int{
		"shoal_fleet_gpus": 1000, "shoal_cluster_status": 600, "shoal_cluster_heartbeat_age_seconds": 100,
		"shoal_queue_resource_usage": 150, "shoal_admission_wait_time_seconds": 760,
	} {
		if fleet100[fam] != want {
			t.Errorf("100 clusters: %s = %d, want %d", fam, fleet100[fam], want)
		}
	}
	if n := Total(fleet100); n != 3299 {
		t.Errorf("100 clusters: %d series, want 3,299 (docs/metrics.md)", n)
	}
	// The demo fleet of docs/metrics.md: 3 clusters, research (h100) and
	// research/nlp (h100 with a borrowing limit, mig-1g.10gb), one job
	// running in research/nlp on H100s.
	demo := Series(Shape{Clusters: 3, Pools: 1, Queues: []QueueShape{
		{Quotas: 1, Held: 1}, {Quotas: 2, Limits: 1, Held: 1, Placed: true},
	}})
	if n := Total(demo); n != 163 {
		t.Errorf("demo fleet: %d series, want 163 (docs/metrics.md)", n)
	}
}
