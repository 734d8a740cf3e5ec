// SPDX-License-Identifier: Apache-2.0

package pools

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var (
	poolNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shoal_pool_nodes",
		Help: "Nodes in a GPU pool, as the hub last computed it.",
	}, []string{"pool"})
	poolGPUs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shoal_pool_gpus",
		Help: "Whole GPUs of a GPU pool's nodes by state (used, free).",
	}, []string{"pool", "state"})
	poolIdle = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shoal_pool_idle_nodes",
		Help: "Nodes of a scale-to-zero GPU pool with no GPU in use: what an autoscaler or provider may release.",
	}, []string{"pool"})
)

// Register registers the package's metrics.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{poolNodes, poolGPUs, poolIdle} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func observe(pool string, st *v1alpha1.GPUPoolStatus) {
	poolNodes.WithLabelValues(pool).Set(float64(st.Nodes))
	poolGPUs.WithLabelValues(pool, "used").Set(float64(st.UsedGPUs))
	poolGPUs.WithLabelValues(pool, "free").Set(float64(st.FreeGPUs))
	poolIdle.WithLabelValues(pool).Set(float64(len(st.IdleNodes)))
}
