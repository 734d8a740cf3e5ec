// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
)

var (
	descFleetGPUs = prometheus.NewDesc("shoal_fleet_gpus",
		"Whole GPUs of the fleet by cluster, pool, product and state (free, allocated, reserved, unhealthy, cordoned; docs/metrics.md).",
		[]string{"cluster", "pool", "product", "state"}, nil)
	descClusterStatus = prometheus.NewDesc("shoal_cluster_status",
		"1 for the cluster's current state (Pending, Ready, NotReady, Cordoned, Draining, Lost), 0 for the others.",
		[]string{"cluster", "state"}, nil)
	descHeartbeatAge = prometheus.NewDesc("shoal_cluster_heartbeat_age_seconds",
		"Time since the cluster's agent last reached the hub, at the end of the last scheduling cycle.",
		[]string{"cluster"}, nil)
	descInventoryAge = prometheus.NewDesc("shoal_cluster_inventory_age_seconds",
		"Age of the cluster's last inventory report, at the end of the last scheduling cycle.",
		[]string{"cluster"}, nil)
	descNominal = prometheus.NewDesc("shoal_queue_nominal_quota",
		"GPUs guaranteed to the queue per GPU class (spec.quotas[class].nominal).",
		[]string{"queue", "gpu_class"}, nil)
	descBorrowingLimit = prometheus.NewDesc("shoal_queue_borrowing_limit",
		"GPUs the queue may borrow beyond its nominal quota per GPU class (only classes with a limit).",
		[]string{"queue", "gpu_class"}, nil)
	descUsage = prometheus.NewDesc("shoal_queue_resource_usage",
		"GPUs (or MIG slices) held by the queue and its descendants per GPU class; gpu_class \"all\" counts every class once.",
		[]string{"queue", "gpu_class"}, nil)
	descBorrowed = prometheus.NewDesc("shoal_queue_borrowed_gpus",
		"GPUs the queue holds beyond its nominal quota per GPU class.",
		[]string{"queue", "gpu_class"}, nil)
	descPendingJobs = prometheus.NewDesc("shoal_pending_workloads",
		"Jobs of the queue waiting for placement (phase Pending, not booked).",
		[]string{"queue"}, nil)
	descPendingGPUs = prometheus.NewDesc("shoal_pending_gpus",
		"GPUs requested by the queue's pending jobs.",
		[]string{"queue"}, nil)
	descActiveJobs = prometheus.NewDesc("shoal_admitted_active_workloads",
		"Jobs of the queue holding a booking (placed, starting or running).",
		[]string{"queue"}, nil)
	descFairShare = prometheus.NewDesc("shoal_queue_fair_share_usage",
		"The queue's decayed GPU usage the fair-share order compares (GPUs, exponentially weighted; leaf queues).",
		[]string{"queue"}, nil)
	descJobs = prometheus.NewDesc("shoal_jobs",
		"Jobs in the store by phase (Pending, Placed, Running, Succeeded, Failed, Cancelled).",
		[]string{"phase"}, nil)

	// cycleBuckets: 1 ms to 16.4 s, the powers of two of earlier releases
	// (whose le values dashboards may use) with one bucket about ×√2
	// between each two (29 in all), so a quantile read from them is within
	// about 41% rather than a factor of two.
	cycleBuckets = []float64{0.001, 0.0014, 0.002, 0.0028, 0.004, 0.0057, 0.008, 0.011, 0.016, 0.023, 0.032, 0.045,
		0.064, 0.09, 0.128, 0.18, 0.256, 0.36, 0.512, 0.72, 1.024, 1.45, 2.048, 2.9, 4.096, 5.8, 8.192, 11.6, 16.384}

	cycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_scheduler_cycle_duration_seconds",
		Help:    "Duration of a scheduling cycle: read, decide, book and queue status.",
		Buckets: cycleBuckets,
	})
	cycleCPU = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "shoal_scheduler_cycle_cpu_seconds",
		Help: "CPU time a leader's scheduling cycle took on its own thread (not the explanations written beside it): " +
			"its duration less the time it waited for the store and for a core.",
		Buckets: cycleBuckets,
	})
	admissionWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shoal_admission_wait_time_seconds",
		Help:    "Time from a job's submission (or requeue) to its placement by the scheduler, by queue.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
	}, []string{"queue"})

	fleetGauges = &fleetCollector{}
)

// clusterStates are the values of shoal_cluster_status's state label.
var clusterStates = []v1alpha1.ClusterState{v1alpha1.ClusterPending, v1alpha1.ClusterReady, v1alpha1.ClusterNotReady,
	v1alpha1.ClusterCordoned, v1alpha1.ClusterDraining, v1alpha1.ClusterLost}

// jobPhases are the values of shoal_jobs's phase label.
var jobPhases = []v1alpha1.JobPhase{v1alpha1.JobPending, v1alpha1.JobPlaced, v1alpha1.JobRunning,
	v1alpha1.JobSucceeded, v1alpha1.JobFailed, v1alpha1.JobCancelled}

// fleetCollector exports the last fleetView; nothing while this replica
// has not led a cycle (the leader's view is the fleet's).
type fleetCollector struct {
	mu   sync.Mutex
	view *fleetView
}

func (c *fleetCollector) set(v *fleetView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.view = v
}

// Describe implements prometheus.Collector.
func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFleetGPUs, descClusterStatus, descHeartbeatAge, descInventoryAge, descNominal,
		descBorrowingLimit, descUsage, descBorrowed, descPendingJobs, descPendingGPUs, descActiveJobs, descFairShare, descJobs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	v := c.view
	c.mu.Unlock()
	if v == nil {
		return
	}
	gauge := func(d *prometheus.Desc, val float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, labels...)
	}
	for k, n := range v.gpus {
		gauge(descFleetGPUs, float64(n), k.cluster, k.pool, k.product, k.state)
	}
	for name, cv := range v.clusters {
		for _, st := range clusterStates {
			gauge(descClusterStatus, b2f(cv.state == st), name, string(st))
		}
		if cv.hasHeartbeat {
			gauge(descHeartbeatAge, cv.heartbeatAge, name)
		}
		if cv.hasInvt {
			gauge(descInventoryAge, cv.invAge, name)
		}
	}
	for name, qv := range v.queues {
		for _, m := range []struct {
			d    *prometheus.Desc
			vals map[string]int
		}{{descNominal, qv.nominal}, {descBorrowingLimit, qv.borrowingLimit}, {descUsage, qv.usage}, {descBorrowed, qv.borrowed}} {
			for class, n := range m.vals {
				gauge(m.d, float64(n), name, class)
			}
		}
		gauge(descPendingJobs, float64(qv.pendingJobs), name)
		gauge(descPendingGPUs, float64(qv.pendingGPUs), name)
		gauge(descActiveJobs, float64(qv.activeJobs), name)
		gauge(descFairShare, qv.fairShare, name)
	}
	for _, p := range jobPhases {
		gauge(descJobs, float64(v.phases[p]), string(p))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// observeDuration records a cycle that began at start; defer it.
func (s *Scheduler) observeDuration(start time.Time) {
	cycleDuration.Observe(s.cfg.Clock.Since(start).Seconds())
}

// observeFleet publishes the fleet and queue gauges from a cycle that
// booked everything it decided, and the admission wait of the jobs it placed.
func (s *Scheduler) observeFleet(f *fleet, snap *placement.Snapshot, in placement.Input, usage map[string]placement.QueueUsage, res Result) {
	now := s.cfg.Clock.Now()
	fleetGauges.set(viewOf(f, snap, in.Queues, usage, in.Usage, f.tally, now, &s.gpus))
	for _, it := range res.placed {
		if it.Object == nil {
			continue
		}
		if start, ok := admissionWaitStart(it.Object); ok {
			admissionWait.WithLabelValues(it.Object.Spec.Queue).Observe(max(0, now.Sub(start).Seconds()))
		}
	}
}

// forgetFleet drops the gauges when this replica stops leading.
func forgetFleet() { fleetGauges.set(nil) }
