// SPDX-License-Identifier: Apache-2.0

package app

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/pools"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// registerMetrics registers every hub package's collectors with the
// default registry, once per process: a second hub in the same process
// (tests) shares them.
func registerMetrics() error { return RegisterMetrics(prometheus.DefaultRegisterer) }

// RegisterMetrics registers every hub package's collectors with reg (a
// collector already there is kept); docs/metrics.md lists them.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, register := range []func(prometheus.Registerer) error{
		store.Register, server.RegisterMetrics, jobs.Register, models.Register, inference.Register, pools.Register, rollout.Register, registry.RegisterMetrics, scheduler.Register, dispatch.Register,
	} {
		var are prometheus.AlreadyRegisteredError
		if err := register(reg); err != nil && !errors.As(err, &are) {
			return err
		}
	}
	return nil
}
