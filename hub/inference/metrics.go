// SPDX-License-Identifier: Apache-2.0

package inference

import "github.com/prometheus/client_golang/prometheus"

var (
	reconciles = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_inference_reconciles_total",
		Help: "Inference services reconciled by the hub's inference controller.",
	})
	replicaChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_inference_replica_changes_total",
		Help: "Replica jobs the inference controller created or cancelled, by action.",
	}, []string{"action"})
)

// Register registers the package's metrics.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{reconciles, replicaChanges} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
