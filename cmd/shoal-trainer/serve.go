// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// InFlightGauge is the gauge of the requests being answered, on /metrics
// (an inference service's spec.autoscaling.metric.name).
const InFlightGauge = "shoal_requests_in_flight"

// serve is the serve mode, a stand-in for a model server: GET / answers
// {"model", "service", "pod"} (SHOAL_MODEL, SHOAL_SERVICE, HOSTNAME) after
// --delay, GET /healthz 200, GET /metrics the gauge InFlightGauge of the
// requests to / being answered. With --fail-model, a model whose name
// contains it exits 1 at start (a bad version's replicas fail). SIGTERM
// stops it after the requests in flight. It returns the exit status.
func serve(args []string) int {
	fs := flag.NewFlagSet("shoal-trainer serve", flag.ExitOnError)
	port := fs.Int("port", 8000, "port to serve HTTP on")
	delay := fs.Duration("delay", 0, "time to answer a request to /")
	failModel := fs.String("fail-model", "", "exit 1 at start when $"+v1alpha1.EnvModel+" contains this")
	_ = fs.Parse(args) // ExitOnError
	s := &server{model: os.Getenv(v1alpha1.EnvModel), service: os.Getenv(v1alpha1.EnvService),
		pod: os.Getenv("HOSTNAME"), delay: *delay}
	if *failModel != "" && strings.Contains(s.model, *failModel) {
		fmt.Fprintf(os.Stderr, "serve: model %q contains %q (--fail-model): failing\n", s.model, *failModel)
		return 1
	}
	lis, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	// PID 1 of its container: a signal without a handler would be ignored.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("serve: model %s of service %s on :%d\n", s.model, s.service, *port)
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 1
	}
	fmt.Println("serve: stopped")
	return 0
}

// server answers the serve mode's requests.
type server struct {
	model, service, pod string
	delay               time.Duration
	inFlight            atomic.Int64
}

// answer is the body of GET /.
type answer struct {
	Model   string `json:"model"`
	Service string `json:"service"`
	Pod     string `json:"pod"`
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.root)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /metrics", s.metrics)
	return mux
}

// maxHold bounds a request's ?hold=.
const maxHold = 10 * time.Minute

// root answers after the delay (or the request's ?hold=DURATION, at most
// maxHold: a test holding requests in flight), counted in flight meanwhile.
func (s *server) root(w http.ResponseWriter, req *http.Request) {
	delay := s.delay
	if h := req.URL.Query().Get("hold"); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil || d < 0 || d > maxHold {
			http.Error(w, fmt.Sprintf("hold %q: want a duration of at most %s", h, maxHold), http.StatusBadRequest)
			return
		}
		delay = d
	}
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done(): // the client went away
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer{Model: s.model, Service: s.service, Pod: s.pod})
}

// metrics serves the in-flight gauge in the Prometheus text format.
func (s *server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = fmt.Fprintf(w, "# HELP %[1]s Requests to / being answered.\n# TYPE %[1]s gauge\n%[1]s %d\n", InFlightGauge, s.inFlight.Load())
}
