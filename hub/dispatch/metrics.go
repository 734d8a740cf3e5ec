// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_dispatch_decisions_total",
		Help: "Two-phase dispatch decisions, by reason (Preparing, Committed, Aborting, Restarting, Failing).",
	}, []string{"reason"})
	toRunning = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_dispatch_prepare_to_running_seconds",
		Help:    "Time from the start of a gang's dispatch to every member running.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
	placedToPrepared = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_dispatch_placed_to_prepared_seconds",
		Help:    "Time from a gang's placement (status.placement.time) to its commit, every member prepared in its cluster.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
	preparedToRunning = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_dispatch_prepared_to_running_seconds",
		Help:    "Time from a gang's commit (status.dispatch.time) to every member running.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
	passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_dispatch_passes_total",
		Help: "Dispatcher sweeps (clusters read, orphans removed, every job queued), by result (ok, error).",
	}, []string{"result"})
	reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_dispatch_reconciles_total",
		Help: "Reconciles of one job by the dispatcher's workers, by result (ok, conflict, error).",
	}, []string{"result"})
	queueDepth = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_dispatch_queue_depth",
		Help: "Jobs queued for a dispatcher worker.",
	})
	busyWorkers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_dispatch_workers_busy",
		Help: "Dispatcher workers reconciling a job now.",
	})
	preparingMembers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_dispatch_preparing_members",
		Help: "Members of the gangs preparing now (bounded by --max-preparing-members).",
	})
	waitingGangs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_dispatch_waiting_gangs",
		Help: "Placed gangs waiting for room under --max-preparing-members before their dispatch starts.",
	})
)

// Register registers the dispatcher's metrics.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{decisions, toRunning, placedToPrepared, preparedToRunning, passes,
		reconciles, queueDepth, busyWorkers, preparingMembers, waitingGangs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observeDecision counts a decision written on j; a commit also records
// the time since the job's placement.
func observeDecision(j *v1alpha1.Job, dec v1alpha1.DispatchStatus, at time.Time) {
	decisions.WithLabelValues(string(dec.Phase)).Inc()
	if p := j.Status.Placement; dec.Phase == v1alpha1.DispatchCommitted && p != nil && p.Time != nil {
		placedToPrepared.Observe(max(0, at.Sub(p.Time.Time).Seconds()))
	}
}

// starts remembers when this replica started dispatching each epoch.
var starts sync.Map

func (d *Dispatcher) observeStart(job string, epoch int64, at time.Time) {
	starts.Store(job+"/"+strconv.FormatInt(epoch, 10), at)
}

// observeRunning records that every member of j's epoch runs: the time
// since this replica started its dispatch and since its commit.
func (d *Dispatcher) observeRunning(job string, j *v1alpha1.Job, epoch int64, at time.Time) {
	if disp := j.Status.Dispatch; disp != nil && disp.Epoch == epoch && disp.Phase == v1alpha1.DispatchCommitted && disp.Time != nil {
		preparedToRunning.Observe(max(0, at.Sub(disp.Time.Time).Seconds()))
	}
	k := job + "/" + strconv.FormatInt(epoch, 10)
	if v, ok := starts.LoadAndDelete(k); ok {
		toRunning.Observe(at.Sub(v.(time.Time)).Seconds())
	}
}
