// SPDX-License-Identifier: Apache-2.0

package podsync

import "github.com/prometheus/client_golang/prometheus"

var (
	metricCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_agent_local_pods_created_total", Help: "Local pods created for hub pods."})
	metricDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_agent_local_pods_deleted_total", Help: "Local pods deleted because their hub pod was deleted."})
	metricLost = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_agent_local_pods_lost_total", Help: "Local pods deleted behind the agent's back (reported as LocalPodDeleted)."})
	metricFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_agent_local_pods_stopped_total",
		Help: "Local pods the agent stopped itself, by reason (NodeNotReady, GPUUnhealthy, StaleEpoch)."}, []string{"reason"})
)

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricCreated, metricDeleted, metricLost, metricFailed}
}
