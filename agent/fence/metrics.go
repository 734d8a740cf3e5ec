// SPDX-License-Identifier: Apache-2.0

package fence

import "github.com/prometheus/client_golang/prometheus"

var (
	metricFenced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_agent_fenced_total",
		Help: "Times the agent fenced itself: it had not reached the hub for the fence timeout and stopped every member.",
	})
	metricClamped = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_agent_fence_timeout_clamped",
		Help: "1 when the agent's --fence-timeout exceeds the hub's --cluster-fence-timeout and the agent fences by the hub's.",
	})
)

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricFenced, metricClamped} }
