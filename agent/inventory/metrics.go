// SPDX-License-Identifier: Apache-2.0

package inventory

import "github.com/prometheus/client_golang/prometheus"

var (
	metricBuildSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shoal_agent_inventory_build_seconds",
		Help:    "Time to build the inventory from the informer caches.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	metricGeneration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_agent_inventory_generation",
		Help: "Generation of the last published inventory.",
	})
)

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricBuildSeconds, metricGeneration}
}
