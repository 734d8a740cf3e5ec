// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

var (
	shared *store.Store
	ca     *pki.CA
	prefix atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test starts from newEnv, which skips
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shoal-rollout-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if ca, err = pki.LoadOrCreateCA(dir + "/pki"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if shared, err = store.Open(ctx, store.Config{DataDir: dir + "/etcd", Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	return m.Run()
}

// env is a store prefix of its own with a fake clock, a Registry and a Controller.
type env struct {
	ctx      context.Context
	st       *store.Store
	clk      *clocktesting.FakeClock
	reg      *registry.Registry
	ctrl     *rollout.Controller
	clusters *store.Collection[*v1alpha1.Cluster]
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("uses an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := store.Open(ctx, store.Config{Endpoints: []string{shared.ClientURL()}, Prefix: fmt.Sprintf("/t%d/", prefix.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.New(s, ca, registry.Config{Clock: clk})
	return &env{ctx: ctx, st: s, clk: clk, reg: reg, ctrl: rollout.NewController(s, reg, rollout.Config{Clock: clk}),
		clusters: store.NewCollection(s, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())}
}

// addCluster writes a Ready cluster record, as the registry would after a
// registration and the first heartbeat and inventory (a test fixture: only
// the registry writes cluster records).
func (e *env) addCluster(t *testing.T, name string) {
	t.Helper()
	cl := &v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{UID: "uid-" + name}, Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady}}
	cl.Name = name
	if _, err := e.clusters.Create(e.ctx, name, cl); err != nil {
		t.Fatal(err)
	}
}

func (e *env) setState(t *testing.T, name string, state v1alpha1.ClusterState) {
	t.Helper()
	if _, _, err := e.clusters.GuaranteedUpdate(e.ctx, name, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
		c.Status.State = state
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t *testing.T, name string) *v1alpha1.Cluster {
	t.Helper()
	c, _, err := e.clusters.Get(e.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
