// SPDX-License-Identifier: Apache-2.0

package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

// httpHandler serves /healthz (the process runs), /readyz (readyz.go,
// with the failures' detail), /metrics and, with Profiling, /debug/pprof/:
// the loopback or TLS-with-client-certificates endpoint.
func (s *Server) httpHandler() http.Handler {
	mux := endpoint.HealthHandler(nil, true)
	mux.Handle("/readyz", s.readyHandler(true))
	mux.Handle("/metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// healthHandler serves /healthz and /readyz only, without error detail:
// the plain endpoint the kubelet probes.
func (s *Server) healthHandler() http.Handler {
	mux := endpoint.HealthHandler(nil, false)
	mux.Handle("/readyz", s.readyHandler(false))
	return mux
}
