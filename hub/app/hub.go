// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// Hub is one hub replica. Run builds every part and serves until its ctx
// ends; Ready, Done and Err follow it from other goroutines, and Store, CA
// and Registry give the parts it built once Ready has closed.
type Hub struct {
	cfg     Config
	started atomic.Bool
	ready   chan struct{}
	done    chan struct{}
	err     error

	// Set before ready closes.
	st    *store.Store
	ca    *pki.CA
	reg   *registry.Registry
	audit *audit.Log
	srv   *server.Server
}

// Run builds a hub from cfg and runs it until ctx ends or a part fails; it
// returns nil after a clean stop.
func Run(ctx context.Context, cfg Config) error {
	h, err := New(cfg)
	if err != nil {
		return err
	}
	return h.Run(ctx)
}

// New completes cfg (see Config.Complete) and returns a hub that Run
// starts; nothing is opened yet.
func New(cfg Config) (*Hub, error) {
	if err := cfg.Complete(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, ready: make(chan struct{}), done: make(chan struct{})}, nil
}

// Ready closes once every part is built and the gRPC server listens.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Done closes when Run has returned.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Err waits for Run to return and gives its result.
func (h *Hub) Err() error {
	<-h.done
	return h.err
}

// Address is the host:port agents and the CLI dial (Config.AdvertiseAddress).
func (h *Hub) Address() string { return h.cfg.AdvertiseAddress }

// Store is the hub's store; valid after Ready, closed when Run returns.
func (h *Hub) Store() *store.Store { return h.st }

// CA is the hub CA; valid after Ready.
func (h *Hub) CA() *pki.CA { return h.ca }

// RESTAddress is the host:port of the REST face (Config.RESTListen), "" when
// it is off; valid after Ready.
func (h *Hub) RESTAddress() string {
	if h.srv == nil {
		return ""
	}
	if a := h.srv.RESTAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Registry is the cluster registry; valid after Ready.
func (h *Hub) Registry() *registry.Registry { return h.reg }

// Run builds every part, serves until ctx ends or a part fails, and closes
// the store. It returns nil after a clean stop. A Hub runs once.
func (h *Hub) Run(ctx context.Context) (err error) {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("app: the hub already ran")
	}
	defer func() {
		h.err = err
		close(h.done)
	}()
	c := &h.cfg
	log := klog.FromContext(ctx)
	rc, err := hubCluster(c)
	if err != nil {
		return err
	}
	if err := registerMetrics(); err != nil {
		return err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("create the data directory: %w", err)
	}
	st, err := openStore(ctx, c, true)
	if err != nil {
		return err
	}
	if n := st.RevokedSessions(); n > 0 {
		log.Info("Revoked the election sessions of this replica's previous process: standbys or this replica lead at once", "sessions", n)
	}
	defer func() { _ = st.Close() }()
	ca, serving, err := loadPKI(ctx, c, st)
	if err != nil {
		return err
	}
	if err := writeAdminConfig(c, ca); err != nil {
		return err
	}
	h.st, h.ca = st, ca
	if h.audit, err = audit.Open(c.AuditLog); err != nil {
		return err
	}
	defer func() { _ = h.audit.Close() }()
	loops, srv, err := h.build(ctx, rc, serving)
	if err != nil {
		return err
	}
	if r, ok := ca.Rotation(); ok {
		log.Info("CA rotation in progress: certificates of the previous CA are accepted, and one of it is served, until the overlap ends",
			"previousCAHash", ca.Hashes()[1], "overlapUntil", r.Until)
	}
	log.Info("Hub starting", "dataDir", c.DataDir, "embeddedEtcd", st.Embedded(), "advertise", c.AdvertiseAddress,
		"caHash", ca.Hash(), "hubCluster", rc != nil, "adminConfig", c.AdminConfig, "auditLog", c.AuditLog, "identity", c.Identity)
	g, gctx := errgroup.WithContext(ctx)
	for _, run := range loops {
		g.Go(func() error { return run(gctx) })
	}
	g.Go(func() error {
		select {
		case <-srv.Ready():
			close(h.ready)
		case <-gctx.Done():
		}
		return nil
	})
	err = g.Wait()
	log.Info("Hub stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
