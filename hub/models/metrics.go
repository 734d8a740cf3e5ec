// SPDX-License-Identifier: Apache-2.0

package models

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

var registrations = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shoal_model_versions_registered_total",
	Help: "Model versions registered (repeats of an existing registration not counted).",
})

// Register registers the package's metrics on reg; registering again is not an error.
func Register(reg prometheus.Registerer) error {
	if err := reg.Register(registrations); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}
