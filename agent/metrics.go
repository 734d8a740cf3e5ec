// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/agent/checkpoints"
	"github.com/shoal-dev/shoal/agent/fence"
	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/agent/inventory"
	"github.com/shoal-dev/shoal/agent/nodehealth"
	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/agent/serviceload"
)

// Collectors returns the collectors of every agent package, for the
// agent's /metrics registry (docs/metrics.md lists them).
func Collectors() []prometheus.Collector {
	var out []prometheus.Collector
	for _, cs := range [][]prometheus.Collector{checkpoints.Collectors(), fence.Collectors(), gitops.Collectors(), hubclient.Collectors(),
		inventory.Collectors(), nodehealth.Collectors(), podsync.Collectors(), serviceload.Collectors()} {
		out = append(out, cs...)
	}
	return out
}
