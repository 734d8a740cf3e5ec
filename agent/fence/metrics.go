// SPDX-License-Identifier: Apache-2.0

package fence

import "github.com/prometheus/client_golang/prometheus"

var metricFenced = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shoal_agent_fenced_total",
	Help: "Times the agent fenced itself: it had not reached the hub for the fence timeout and stopped every member.",
})

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricFenced} }
