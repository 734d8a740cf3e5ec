// SPDX-License-Identifier: Apache-2.0

package nodehealth

import "github.com/prometheus/client_golang/prometheus"

var metricReclaimed = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shoal_agent_members_reclaimed_total",
	Help: "Members marked NodeReclaimed because their node carries a spot taint or label (--spot-node-taint, --spot-node-label).",
})

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricReclaimed} }
