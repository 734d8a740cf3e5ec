// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// hub is the hub in-process, run by hub/app: the API hub (server, registry
// and store) runs for the whole package; the scheduler and dispatcher ("the
// scheduling hub") run in hub replicas of their own on the same store, so
// that each can be stopped and restarted on its own.
type hub struct {
	app    *app.Hub
	st     *store.Store
	ca     *pki.CA
	reg    *registry.Registry
	jobs   *jobs.Service
	queues *queues.Service
	kube   kubernetes.Interface
	addr   string
	dir    string
	hubRC  *rest.Config
	cancel context.CancelFunc

	schedStop, dispStop func()
	rctx                context.Context
}

// labelCluster is a cluster label every e2e agent reports (its own name),
// for jobs that must land on one cluster.
const labelCluster = "e2e.shoal.dev/cluster"

// spotTaint is the taint every e2e agent reads as a spot node marked to go
// (--spot-node-taint).
const spotTaint = "e2e.shoal.dev/spot-termination"

// hubFenceTimeout is the hub's fence timeout in these tests.
const hubFenceTimeout = 20 * time.Second

// prepareTimeout is the dispatcher's prepare deadline in these tests.
const prepareTimeout = 15 * time.Second

// config is a hub replica's Config that runs only the leader-elected loops
// named; with no Etcd endpoints it embeds the etcd.
func (h *hub) config(endpoints []string, only ...app.Controller) (app.Config, error) {
	port, err := store.FreePort()
	if err != nil {
		return app.Config{}, err
	}
	cfg := app.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen, cfg.AdminConfig = h.dir, fmt.Sprintf("127.0.0.1:%d", port), "", ""
	cfg.Etcd.Endpoints, cfg.ElectionTTL, cfg.Embedded.UnsafeNoFsync = endpoints, 2*time.Second, true
	cfg.Etcd.InsecureAllowPlaintext = true // the test etcd listens on loopback, plain http
	cfg.HubCluster, cfg.ClusterGrace, cfg.Identity = h.hubRC, 10*time.Second, "e2e"
	// A short fence timeout, so that the partition test sees a cut-off
	// cluster Lost (after fenceTimeout plus the registry's margin).
	cfg.FenceTimeout = hubFenceTimeout
	cfg.Scheduler = scheduler.Config{Interval: 200 * time.Millisecond}
	cfg.SchedulerOptions = []scheduler.Option{scheduler.WithPlacementOptions(placement.WithPreemptAfter(0))}
	cfg.Dispatch = dispatch.Config{Interval: 200 * time.Millisecond,
		PrepareTimeout: prepareTimeout, Backoff: time.Second, MaxBackoff: 4 * time.Second}
	for _, c := range []app.Controller{app.Scheduler, app.Dispatcher, app.Rollouts} {
		if !slices.Contains(only, c) {
			cfg.Disable = append(cfg.Disable, c)
		}
	}
	return cfg, nil
}

func startHub(ctx context.Context, dir string, hubRC *rest.Config) (*hub, error) {
	h := &hub{dir: dir, hubRC: hubRC}
	cfg, err := h.config(nil)
	if err != nil {
		return nil, err
	}
	if h.app, err = app.New(cfg); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel, h.rctx = cancel, rctx
	go func() { _ = h.app.Run(rctx) }()
	select {
	case <-h.app.Ready():
	case <-h.app.Done():
		cancel()
		return nil, h.app.Err()
	}
	h.st, h.ca, h.reg, h.addr = h.app.Store(), h.app.CA(), h.app.Registry(), h.app.Address()
	h.jobs = jobs.New(h.st)
	h.queues = queues.New(h.st, h.jobs)
	hubRC = rest.CopyConfig(hubRC)
	hubRC.QPS, hubRC.Burst = 200, 400
	if h.kube, err = kubernetes.NewForConfig(hubRC); err != nil {
		h.stop()
		return nil, err
	}
	h.startScheduling(rctx)
	return h, nil
}

// startScheduling starts a fresh scheduler and dispatcher (a hub replica
// each).
func (h *hub) startScheduling(parent context.Context) {
	h.schedStop = h.run(parent, h.replica(app.Scheduler).Run)
	h.dispStop = h.run(parent, h.newDispatcher().Run)
}

func (h *hub) newDispatcher() *app.Hub { return h.replica(app.Dispatcher) }

// replica is a hub replica on the API hub's etcd that runs only the loop
// named.
func (h *hub) replica(only app.Controller) *app.Hub {
	cfg, err := h.config([]string{h.st.ClientURL()}, only)
	if err != nil {
		panic(err)
	}
	r, err := app.New(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// run runs fn until the returned stop is called.
func (h *hub) run(parent context.Context, fn func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "hub replica stopped:", err)
		}
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
	if h.schedStop != nil {
		h.schedStop()
		h.dispStop()
	}
	h.cancel()
	if err := h.app.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "hub stopped:", err)
	}
}

// startAgent registers and runs the agent of one workload cluster; mutate
// adjusts its config (the partition test routes it through proxies).
func (h *hub) startAgent(ctx context.Context, cluster string, local *rest.Config, mutate ...func(*agent.Config)) (func(), error) {
	token, _, err := h.reg.CreateToken(ctx, registry.TokenOptions{Description: "e2e " + cluster})
	if err != nil {
		return nil, err
	}
	cfg := agent.Config{HubAddress: h.addr, Token: token, CAHash: h.ca.Hash(), Cluster: cluster,
		Local: asDeployed(local), HeartbeatInterval: time.Second, KubeletListen: "127.0.0.1:0",
		KubeletAddress: "127.0.0.1", KubeletClientCAFile: fl.KubeletClientCAFile(), LeaseDurationSeconds: 20, Labels: map[string]string{labelCluster: cluster}, InventoryInterval: 200 * time.Millisecond,
		Version: "v0.0.0-e2e", FenceTimeout: hubFenceTimeout, SpotNodeTaints: []string{spotTaint}}
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := agent.New(cfg)
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
