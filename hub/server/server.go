// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"k8s.io/klog/v2"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/federation/endpoint"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

// Config assembles a Server.
type Config struct {
	// Listen is the gRPC address (host:port).
	Listen string
	// HTTPListen is the address of /healthz, /readyz and /metrics; "" disables it.
	// Plain HTTP only on a loopback address; elsewhere HTTPTLS is required.
	HTTPListen string
	// HTTPTLS serves HTTPListen over TLS that requires client
	// certificates of its client CA (endpoint.Config).
	HTTPTLS endpoint.TLSFiles
	// Profiling serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on HTTPListen.
	Profiling bool
	// RESTListen is the address of the REST/JSON face (hub/rest,
	// docs/rest.md), served over TLS with TLS's configuration: the same
	// certificates, callers and authorization as gRPC; "" disables it.
	RESTListen string
	// RESTHandlers are further handlers (pattern: handler, http.ServeMux
	// syntax) served on RESTListen beside /v1/ and /openapi.json.
	RESTHandlers map[string]http.Handler
	// HealthListen is a plain HTTP address serving /healthz and /readyz
	// only, for the kubelet's probes; "" disables it.
	HealthListen string
	// RegisterLimit and RegisterBurst rate-limit Register per source IP
	// (a token bucket each); 0: DefaultRegisterLimit, DefaultRegisterBurst.
	// A negative RegisterLimit disables the limit.
	RegisterLimit rate.Limit
	RegisterBurst int
	// TLS is the serving configuration (pki.CA.ServerTLSConfig).
	TLS *tls.Config
	// Store backs readiness.
	Store *store.Store
	// ReadyChecks are further named checks of /readyz, after the
	// server's own (store, api): the leader-elected parts' (readyz.go).
	ReadyChecks []ReadyCheck
	// Registry serves the Clusters service and authorizes agents.
	Registry *registry.Registry
	// GitOps, when true, serves agents' GitOps status reports (Clusters
	// ReportGitOpsStatus) through the Registry, from the clusters' GitOps
	// sources and pins.
	GitOps bool
	// Users authenticates user certificates and serves the Users service;
	// without it only agents and public calls are served.
	Users *users.Service
	// Tokens verifies bearer OIDC ID tokens of callers without a client
	// certificate (users.TokenVerifier); nil accepts none.
	Tokens TokenVerifier
	// CAPEM is the hub CA certificate, handed to new users.
	CAPEM []byte
	// Jobs reads the job a call names, for the authorization of Get and
	// Cancel by its queue and owner.
	Jobs JobReader
	// Checkpoints records the checkpoints agents pass on (Clusters
	// ReportJobCheckpoint); nil refuses them.
	Checkpoints CheckpointRecorder
	// Inference reads inference services for the authorization of calls
	// naming one, and records the load agents report; nil refuses both.
	Inference InferenceServices
	// Audit receives one entry per mutating call; nil writes none.
	Audit *audit.Log
	// Services registers further services (jobs, queues) on the gRPC server.
	Services []func(grpc.ServiceRegistrar)
	// Gatherer is what /metrics exposes; default prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// ShutdownTimeout bounds the graceful stop; default 10s.
	ShutdownTimeout time.Duration
}

// Server is the hub's gRPC and HTTP servers.
type Server struct {
	cfg       Config
	grpc      *grpc.Server
	ready     chan struct{}
	stopping  chan struct{} // closed when the graceful stop begins
	grpcLis   net.Listener
	httpLis   net.Listener
	healthLis net.Listener
	restLis   net.Listener
	// gwLis is the in-process listener of the REST gateway's connection
	// (gateway.go), gwConn that connection.
	gwLis  *gatewayListener
	gwConn *grpc.ClientConn
}

// New builds the servers; Run serves them.
func New(cfg Config) (*Server, error) {
	if cfg.TLS == nil || cfg.Registry == nil || cfg.Store == nil {
		return nil, errors.New("server: TLS, Store and Registry are required")
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	if err := (endpoint.Config{Addr: cfg.HTTPListen, TLS: cfg.HTTPTLS}).Validate(); err != nil {
		return nil, fmt.Errorf("server: HTTP endpoint: %w", err)
	}
	auth := authorizer{agents: cfg.Registry, jobs: cfg.Jobs, services: cfg.Inference, audit: cfg.Audit, tokens: cfg.Tokens}
	if cfg.Users != nil {
		auth.users = cfg.Users
	}
	s := &Server{cfg: cfg, ready: make(chan struct{}), stopping: make(chan struct{}), gwLis: newGatewayListener()}
	s.grpc = grpc.NewServer(
		grpc.Creds(serverCreds{TransportCredentials: credentials.NewTLS(cfg.TLS)}),
		grpc.ChainUnaryInterceptor(traceUnary, observeUnary, auth.unary),
		grpc.ChainStreamInterceptor(s.endOnStop, traceStream, observeStream, auth.stream),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(16<<20),
	)
	shoalv1.RegisterClustersServer(s.grpc, clustersService(cfg.Registry, cfg.GitOps, newSourceLimiter(cfg.RegisterLimit, cfg.RegisterBurst), cfg.Checkpoints, cfg.Inference))
	if cfg.Users != nil {
		shoalv1.RegisterUsersServer(s.grpc, &usersServer{users: cfg.Users, caPEM: cfg.CAPEM, oidc: cfg.Tokens != nil})
	}
	for _, register := range cfg.Services {
		register(s.grpc)
	}
	return s, nil
}

// endOnStop cancels a stream's context when the graceful stop begins, so
// that long-lived streams (watches) end and do not hold the stop up; the
// client resumes the watch from its last revision on another replica or
// after the restart.
func (s *Server) endOnStop(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}

// Listen binds the listeners (Run calls it when not done before), so that
// callers can learn the addresses of ":0" listeners.
func (s *Server) Listen() error {
	if s.grpcLis != nil {
		return nil
	}
	l, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Listen, err)
	}
	if s.httpLis, err = (endpoint.Config{Addr: s.cfg.HTTPListen, TLS: s.cfg.HTTPTLS}).Listen(); err != nil {
		_ = l.Close()
		return fmt.Errorf("server: listen on %s: %w", s.cfg.HTTPListen, err)
	}
	closeAll := func() {
		for _, c := range []net.Listener{l, s.httpLis, s.healthLis} {
			if c != nil {
				_ = c.Close()
			}
		}
	}
	if s.cfg.HealthListen != "" {
		if s.healthLis, err = net.Listen("tcp", s.cfg.HealthListen); err != nil {
			closeAll()
			return fmt.Errorf("server: listen on %s: %w", s.cfg.HealthListen, err)
		}
	}
	if s.cfg.RESTListen != "" {
		rl, err := net.Listen("tcp", s.cfg.RESTListen)
		if err != nil {
			closeAll()
			return fmt.Errorf("server: listen on %s: %w", s.cfg.RESTListen, err)
		}
		s.restLis = tls.NewListener(rl, restTLS(s.cfg.TLS))
	}
	s.grpcLis = l
	return nil
}

// Addr is the gRPC listener's address (after Listen).
func (s *Server) Addr() net.Addr { return s.grpcLis.Addr() }

// HTTPAddr is the HTTP listener's address (after Listen), or nil.
func (s *Server) HTTPAddr() net.Addr {
	if s.httpLis == nil {
		return nil
	}
	return s.httpLis.Addr()
}

// RESTAddr is the REST listener's address (after Listen), or nil.
func (s *Server) RESTAddr() net.Addr {
	if s.restLis == nil {
		return nil
	}
	return s.restLis.Addr()
}

// HealthAddr is the health-only listener's address (after Listen), or nil.
func (s *Server) HealthAddr() net.Addr {
	if s.healthLis == nil {
		return nil
	}
	return s.healthLis.Addr()
}

// Ready closes once the servers accept connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx ends, then stops gracefully (in-flight calls get up
// to ShutdownTimeout).
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	log := klog.FromContext(ctx)
	errc := make(chan error, 5)
	go func() { errc <- s.grpc.Serve(s.grpcLis) }()
	var restHandler http.Handler
	if s.restLis != nil {
		go func() { errc <- s.grpc.Serve(s.gwLis) }()
		var err error
		if restHandler, err = s.newGateway(ctx); err != nil {
			s.stop(ctx, nil)
			for _, l := range []net.Listener{s.httpLis, s.healthLis, s.restLis} {
				if l != nil {
					_ = l.Close()
				}
			}
			return err
		}
	}
	var servers []*http.Server
	serve := func(l net.Listener, h http.Handler) {
		if l == nil {
			return
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	serve(s.httpLis, s.httpHandler())
	serve(s.healthLis, s.healthHandler())
	serve(s.restLis, restHandler)
	log.Info("Hub serving", "grpc", s.grpcLis.Addr().String(), "http", addrString(s.HTTPAddr()), "rest", addrString(s.RESTAddr()),
		"httpTLS", s.cfg.HTTPTLS.Set(), "health", addrString(s.HealthAddr()))
	close(s.ready)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("server: %w", err)
	}
	s.stop(ctx, servers)
	return err
}

func (s *Server) stop(ctx context.Context, servers []*http.Server) {
	close(s.stopping)
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	t := time.NewTimer(s.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.grpc.Stop()
	}
	if s.gwConn != nil {
		_ = s.gwConn.Close()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	for _, hs := range servers {
		_ = hs.Shutdown(ctx)
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
