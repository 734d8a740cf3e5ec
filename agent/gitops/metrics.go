// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	syncsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_gitops_syncs_total",
		Help: "GitOps syncs by result: success, or the failure reason (FetchFailed, BuildFailed, ValidationFailed, ApplyFailed, PruneFailed, HealthCheckFailed, CredentialsFailed, InvalidSource).",
	}, []string{"result"})
	syncDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_gitops_sync_duration_seconds",
		Help:    "Duration of a GitOps sync: fetch, build, validate, apply, prune and health wait.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
	})
)

// Register adds the package's collectors to reg; call it once per registry.
func Register(reg prometheus.Registerer) error {
	return errors.Join(reg.Register(syncsTotal), reg.Register(syncDuration))
}

func observeSync(start, end time.Time, err error) {
	syncDuration.Observe(sinceSeconds(start, end))
	result := "success"
	if err != nil {
		result = reasonOf(err, "ApplyFailed")
	}
	syncsTotal.WithLabelValues(result).Inc()
}
