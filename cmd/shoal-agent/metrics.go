// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/federation/endpoint"
)

// serveMetrics serves /metrics and /healthz on metrics, and /healthz
// alone on health (either may be nil), until ctx ends.
func serveMetrics(ctx context.Context, metrics, health net.Listener) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(agent.Collectors()...)
	full := endpoint.HealthHandler(nil, true)
	full.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for _, s := range []struct {
		l net.Listener
		h http.Handler
	}{{metrics, full}, {health, endpoint.HealthHandler(nil, false)}} {
		if s.l == nil {
			continue
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
		go func() {
			if err := srv.Serve(s.l); err != nil && err != http.ErrServerClosed {
				klog.FromContext(ctx).Error(err, "Metrics server stopped", "addr", s.l.Addr().String())
			}
		}()
	}
}
