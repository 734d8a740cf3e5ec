// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

var (
	submissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_job_submissions_total",
		Help: "Job submissions. result: created, existing, dry_run, invalid, refused (queue missing or name taken), error.",
	}, []string{"result"})
	submitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_job_submit_duration_seconds",
		Help:    "Latency of job submissions, validation and store write included.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	batchTxns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_job_batch_transactions_total",
		Help: "Store transactions of batched submissions (up to 100 jobs each). outcome: committed; queue_moved (a queue's revision moved, its status written meanwhile: tried again); split (a name taken meanwhile, or tries used up: its jobs stored one by one).",
	}, []string{"outcome"})
	checkpoints = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_job_checkpoints_total",
		Help: "Checkpoints jobs reported that became their latest (repeats and refused reports not counted).",
	})
	listsPastCompaction = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_job_lists_past_compaction_total",
		Help: "Paged job lists that went on at the newest revision because a compaction removed the revision of their first page.",
	})
)

// Register registers the package's metrics on reg; registering again is not an error.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{submissions, submitDuration, batchTxns, retentionDeleted, checkpoints, listsPastCompaction} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

func observeSubmit(start time.Time, res Result, err error) {
	submitDuration.Observe(time.Since(start).Seconds())
	label := string(res)
	var inv *v1alpha1.InvalidError
	switch {
	case errors.As(err, &inv):
		label = "invalid"
	case errors.Is(err, errs.ErrFailedPrecondition), errors.Is(err, store.ErrAlreadyExists):
		label = "refused"
	case err != nil:
		label = "error"
	}
	submissions.WithLabelValues(label).Inc()
}
