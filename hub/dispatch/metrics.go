// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_dispatch_passes_total",
		Help: "Dispatcher passes, by result (ok, error).",
	}, []string{"result"})
)

// Register registers the dispatcher's metrics.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{decisions, toRunning, passes} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func observeDecision(reason string) { decisions.WithLabelValues(reason).Inc() }

// starts remembers when this replica started dispatching each epoch.
var starts sync.Map

func (d *Dispatcher) observeStart(job string, epoch int64, at time.Time) {
	starts.Store(job+"/"+strconv.FormatInt(epoch, 10), at)
}

func (d *Dispatcher) observeRunning(job string, epoch int64, at time.Time) {
	k := job + "/" + strconv.FormatInt(epoch, 10)
	if v, ok := starts.LoadAndDelete(k); ok {
		toRunning.Observe(at.Sub(v.(time.Time)).Seconds())
	}
}
