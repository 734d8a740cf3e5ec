package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// hub is the hub in-process: its API and registry run for the whole
// package; the scheduler and dispatcher ("the scheduling hub") can be
// restarted on their own.
type hub struct {
	st     *store.Store
	ca     *pki.CA
	reg    *registry.Registry
	jobs   *jobs.Service
	queues *queues.Service
	kube   kubernetes.Interface
	addr   string
	cancel context.CancelFunc
	done   chan error

	schedStop, dispStop func()
	rctx                context.Context
}

// labelCluster is a cluster label every e2e agent reports (its own name),
// for jobs that must land on one cluster.
const labelCluster = "e2e.shoal.dev/cluster"

// prepareTimeout is the dispatcher's prepare deadline in these tests.
const prepareTimeout = 15 * time.Second

func startHub(ctx context.Context, dir string, hubRC *rest.Config) (*hub, error) {
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	serving, err := ca.ServerCertificate([]string{"127.0.0.1"})
	if err != nil {
		return nil, err
	}
	// The serving chain carries the CA so that agents can pin its hash.
	serving.Certificate = append(serving.Certificate, ca.Cert.Raw)
	st, err := store.Open(ctx, store.Config{DataDir: filepath.Join(dir, "etcd"), ElectionTTL: 2 * time.Second,
		Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		return nil, err
	}
	port, err := store.FreePort()
	if err != nil {
		return nil, err
	}
	h := &hub{st: st, ca: ca, addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan error, 1)}
	h.reg = registry.New(st, ca, registry.Config{Credentials: hubcluster.New(hubRC), HubAddress: h.addr,
		Grace: 10 * time.Second})
	h.jobs = jobs.New(st)
	h.queues = queues.New(st, h.jobs)
	hubRC = rest.CopyConfig(hubRC)
	hubRC.QPS, hubRC.Burst = 200, 400
	if h.kube, err = kubernetes.NewForConfig(hubRC); err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{Listen: h.addr, TLS: ca.ServerTLSConfig(serving), Store: st, Registry: h.reg,
		Services: nil})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel, h.rctx = cancel, rctx
	g, gctx := errgroup.WithContext(rctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return h.reg.Run(gctx) })
	go func() { h.done <- g.Wait() }()
	h.startScheduling(rctx)
	return h, nil
}

// startScheduling starts a fresh scheduler and dispatcher (a hub replica).
func (h *hub) startScheduling(parent context.Context) {
	h.schedStop = h.run(parent, scheduler.New(h.st, scheduler.Config{Identity: "e2e", Interval: 200 * time.Millisecond},
		scheduler.WithPlacementOptions(placement.WithPreemptAfter(0))).Run)
	h.dispStop = h.run(parent, h.newDispatcher().Run)
}

func (h *hub) newDispatcher() *dispatch.Dispatcher {
	return dispatch.New(h.st, h.kube, dispatch.Config{Identity: "e2e", Interval: 200 * time.Millisecond,
		PrepareTimeout: prepareTimeout, Backoff: time.Second, MaxBackoff: 4 * time.Second})
}

// run runs fn until the returned stop is called.
func (h *hub) run(parent context.Context, fn func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		_ = fn(ctx)
		close(done)
	}()
	return func() { cancel(); <-done }
}

// restartScheduling stops the scheduler and dispatcher and starts new ones.
func (h *hub) restartScheduling(parent context.Context) {
	h.schedStop()
	h.dispStop()
	h.startScheduling(parent)
}

func (h *hub) stop() {
	h.schedStop()
	h.dispStop()
	h.cancel()
	if err := <-h.done; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "hub stopped:", err)
	}
	_ = h.st.Close()
}

// startAgent registers and runs the agent of one workload cluster.
func (h *hub) startAgent(ctx context.Context, cluster string, local *rest.Config) (func(), error) {
	token, _, err := h.reg.CreateToken(ctx, registry.TokenOptions{Description: "e2e " + cluster})
	if err != nil {
		return nil, err
	}
	a, err := agent.New(agent.Config{HubAddress: h.addr, Token: token, CAHash: h.ca.Hash(), Cluster: cluster,
		Local: asDeployed(local), HeartbeatInterval: time.Second, KubeletListen: "127.0.0.1:0",
		KubeletAddress: "127.0.0.1", LeaseDurationSeconds: 20, Labels: map[string]string{labelCluster: cluster}, InventoryInterval: 200 * time.Millisecond,
		Version: "v0.0.0-e2e"})
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(actx); err != nil && actx.Err() == nil {
			fmt.Fprintf(os.Stderr, "agent %s stopped: %v\n", cluster, err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// asDeployed copies a rest config without client-side limits, as a
// kubeconfig or the in-cluster config gives them: the agent sizes its
// clients itself, and the tests measure that sizing.
func asDeployed(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = 0, 0
	return c
}
