// SPDX-License-Identifier: Apache-2.0

package serviceload

import "github.com/prometheus/client_golang/prometheus"

// Results of a read of a pod's load (the metric's result label).
const (
	resultOK    = "ok"
	resultError = "error"
)

var metricReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shoal_agent_service_load_reads_total",
	Help: "Reads of the load metric of inference replicas' member 0 pods, by result (ok; error: unreachable, not a valid page, or no such gauge).",
}, []string{"result"})

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricReads} }
