// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/fence"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/agent/inventory"
	"github.com/shoal-dev/shoal/agent/podsync"
)

// serveMetrics serves /metrics and /healthz until ctx ends.
func serveMetrics(ctx context.Context, addr string) {
	if addr == "" {
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, cs := range [][]prometheus.Collector{fence.Collectors(), hubclient.Collectors(), inventory.Collectors(), podsync.Collectors()} {
		reg.MustRegister(cs...)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		klog.FromContext(ctx).Error(err, "Metrics server stopped")
	}
}
