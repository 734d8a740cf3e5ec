// SPDX-License-Identifier: Apache-2.0

package checkpoints

import "github.com/prometheus/client_golang/prometheus"

// Results of a checkpoint line (the metric's result label).
const (
	resultReported = "reported"
	resultRefused  = "refused"
	resultInvalid  = "invalid"
	resultError    = "error"
)

var metricLines = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shoal_agent_checkpoint_lines_total",
	Help: "Checkpoint lines read from member 0 logs, by result (reported; refused by the hub; invalid: did not parse or is not a valid report; error: gave up after retries).",
}, []string{"result"})

// Collectors returns the package's metrics for registration.
func Collectors() []prometheus.Collector { return []prometheus.Collector{metricLines} }
