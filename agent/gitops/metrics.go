// SPDX-License-Identifier: Apache-2.0

package gitops

import (
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

// Collectors returns the package's collectors, for the agent's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{syncsTotal, syncDuration} }

func observeSync(start, end time.Time, err error) {
	syncDuration.Observe(sinceSeconds(start, end))
	result := "success"
	if err != nil {
		result = reasonOf(err, "ApplyFailed")
	}
	syncsTotal.WithLabelValues(result).Inc()
}
