// SPDX-License-Identifier: Apache-2.0

package rollout

import "github.com/prometheus/client_golang/prometheus"

var (
	pins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_rollout_pins_total",
		Help: "Cluster pins written by rollouts, by kind (pin, rollback, freeze, repair).",
	}, []string{"kind"})
	halts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_rollout_halts_total",
		Help: "Rollouts halted (a wave failed or was aborted) and rolled back.",
	})
	leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_rollout_leader",
		Help: "1 while this replica leads the rollouts election.",
	})
)

// Register registers the rollout metrics (the GitOps report metric is
// hub/registry's).
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{pins, halts, leader} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
