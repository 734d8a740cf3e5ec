// SPDX-License-Identifier: Apache-2.0

package hubclient

import "github.com/prometheus/client_golang/prometheus"

var (
	metricHeartbeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_agent_heartbeats_total",
		Help: "Heartbeats sent to the hub, by result (ok, error).",
	}, []string{"result"})
	metricReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_agent_inventory_reports_total",
		Help: "Inventory reports sent to the hub, by result (ok, error).",
	}, []string{"result"})
	metricRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_agent_certificate_renewals_total",
		Help: "Renewals of the agent's client certificate, by result (ok, error).",
	}, []string{"result"})
)

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricHeartbeats, metricReports, metricRenewals}
}
