// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

// readyCheck is the hub's readiness: the store answers.
func (s *Server) readyCheck(ctx context.Context) error {
	if _, err := s.cfg.Store.Revision(ctx); err != nil {
		return fmt.Errorf("store unreachable: %w", err)
	}
	return nil
}

// httpHandler serves /healthz (the process runs), /readyz (the store
// answers, with the error) and /metrics: the loopback or
// TLS-with-client-certificates endpoint.
func (s *Server) httpHandler() http.Handler {
	mux := endpoint.HealthHandler(s.readyCheck, true)
	mux.Handle("/metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	return mux
}

// healthHandler serves /healthz and /readyz only, without error detail:
// the plain endpoint the kubelet probes.
func (s *Server) healthHandler() http.Handler { return endpoint.HealthHandler(s.readyCheck, false) }
