// SPDX-License-Identifier: Apache-2.0

package bench

// Shape is what the hub's fleet, queue and job series depend on: the label
// cardinalities of docs/metrics.md, "Number of series".
type Shape struct {
	// Clusters is C; Pools is P, the (pool, product) pairs of a cluster.
	Clusters, Pools int
	// Queues are the queues (parents included).
	Queues []QueueShape
}

// QueueShape is one queue's classes.
type QueueShape struct {
	// Quotas is K, the GPU classes with a quota; Limits those of them
	// with a borrowing limit.
	Quotas, Limits int
	// Held is H, the classes the queue holds GPUs in (usage has one series
	// more, gpu_class="all", while it holds any); Borrowed those it
	// borrows in.
	Held, Borrowed int
	// Placed says whether the (leaf) queue had a placement since the hub
	// started (its admission-wait histogram exists).
	Placed bool
}

// Histogram series: b buckets + Inf + _sum + _count.
const (
	cycleSeries     = 29 + 3       // shoal_scheduler_cycle_duration_seconds
	admissionSeries = 16 + 3       // per queue with a placement
	dispatchSeries  = 3 * (14 + 3) // the three dispatch latency histograms
)

// Series is the number of series of each fleet-sized family of the hub
// (the scheduler leader's fleet, queue and job gauges and the latency
// histograms), by formula from the label cardinalities:
//
//	shoal_fleet_gpus                     C × P × 5 states
//	shoal_cluster_status                 C × 6 states
//	shoal_cluster_{heartbeat,inventory}_age_seconds   C each
//	shoal_queue_nominal_quota            Σ K
//	shoal_queue_borrowing_limit          Σ limits
//	shoal_queue_resource_usage           Σ (H + 1 if H > 0)
//	shoal_queue_borrowed_gpus            Σ borrowed classes
//	pending jobs, pending GPUs, admitted, fair share   Q each
//	shoal_jobs                           6 phases
//	shoal_admission_wait_time_seconds    19 per queue with a placement
//	shoal_scheduler_cycle_duration_seconds   32
//	the three dispatch histograms        3 × 17
func Series(s Shape) map[string]int {
	m := map[string]int{
		"shoal_fleet_gpus":                           s.Clusters * s.Pools * 5,
		"shoal_cluster_status":                       s.Clusters * 6,
		"shoal_cluster_heartbeat_age_seconds":        s.Clusters,
		"shoal_cluster_inventory_age_seconds":        s.Clusters,
		"shoal_jobs":                                 6,
		"shoal_scheduler_cycle_duration_seconds":     cycleSeries,
		"shoal_dispatch_placed_to_prepared_seconds":  dispatchSeries / 3,
		"shoal_dispatch_prepared_to_running_seconds": dispatchSeries / 3,
		"shoal_dispatch_prepare_to_running_seconds":  dispatchSeries / 3,
	}
	for _, q := range s.Queues {
		m["shoal_queue_nominal_quota"] += q.Quotas
		m["shoal_queue_borrowing_limit"] += q.Limits
		if q.Held > 0 {
			m["shoal_queue_resource_usage"] += q.Held + 1
		}
		m["shoal_queue_borrowed_gpus"] += q.Borrowed
		for _, f := range []string{"shoal_pending_workloads", "shoal_pending_gpus", "shoal_admitted_active_workloads", "shoal_queue_fair_share_usage"} {
			m[f]++
		}
		if q.Placed {
			m["shoal_admission_wait_time_seconds"] += admissionSeries
		}
	}
	return m
}

// Total is the sum of Series.
func Total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Fleet100 is the 100-cluster fleet of docs/metrics.md: two GPU products
// per cluster, 50 queues with 2 quota classes each, holding in 2 classes,
// 40 of them leaf queues with placements (10 parents: no placements).
func Fleet100() Shape {
	s := Shape{Clusters: 100, Pools: 2}
	for i := range 50 {
		s.Queues = append(s.Queues, QueueShape{Quotas: 2, Limits: 2, Held: 2, Borrowed: 2, Placed: i < 40})
	}
	return s
}
