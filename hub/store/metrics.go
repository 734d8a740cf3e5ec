// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shoal_store_request_duration_seconds",
		Help:    "Latency of hub store requests to etcd. operation: get, get_serializable, getat, create, update, delete, list, txn, campaign.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"operation"})
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_store_requests_total",
		Help: "Hub store requests to etcd. operation: get, get_serializable, getat, create, update, delete, list, txn, campaign; result: ok, not_found, already_exists, conflict, compacted, error.",
	}, []string{"operation", "result"})
	watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_store_watch_events_total",
		Help: "Events delivered by store watches. type: added, modified, deleted, error.",
	}, []string{"type"})
	watchRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_store_watch_restarts_total",
		Help: "Store watches resumed from their last revision after the serving etcd member failed or lost its leader.",
	})
)

// Register registers the store's metrics on reg. Registering them again on
// the same registry is not an error.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{requestDuration, requestsTotal, watchEvents, watchRestarts} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// observe records one request; call it as `defer observe("get", time.Now(), &err)`.
func observe(operation string, start time.Time, err *error) {
	requestDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	requestsTotal.WithLabelValues(operation, resultLabel(*err)).Inc()
}
