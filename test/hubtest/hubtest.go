// SPDX-License-Identifier: Apache-2.0

// Package hubtest is the shared harness of the hub's scheduling tests: one
// embedded etcd per test binary, a fresh key prefix per test, a fake clock,
// and builders for Ready clusters with inventories and for submitted jobs.
package hubtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// shared is one embedded etcd; every test opens its own key prefix on it.
var (
	shared   *store.Store
	prefixes atomic.Int64
)

// Run is the body of a TestMain: outside -short it starts the shared
// embedded etcd (fsync off: test data), runs the tests and stops it.
func Run(m *testing.M, name string) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "shoal-"+name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shared, err = store.Open(ctx, store.Config{DataDir: dir, Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	return m.Run()
}

// Env is one test's view of the hub: its own store prefix, a fake clock, the
// jobs service, and a queue "research".
type Env struct {
	T     *testing.T
	Ctx   context.Context
	Store *store.Store
	Clock *clocktesting.FakeClock
	Jobs  *jobs.Service
	// ClusterLabels are put on the inventories of the clusters added next.
	ClusterLabels map[string]string
}

// New returns a fresh Env; it skips the test under -short.
func New(t *testing.T) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{Endpoints: []string{shared.ClientURL()},
		Prefix: fmt.Sprintf("/t%d/", prefixes.Add(1)), ElectionTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := &Env{T: t, Ctx: ctx, Store: st, Clock: clk, Jobs: jobs.New(st, jobs.WithClock(clk))}
	if _, err := queues.NewCollection(st).Create(ctx, "research", &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// Node is an 8-GPU H100 node in a rack with used GPUs.
func Node(name, rack string, used int) inventory.Node {
	return inventory.Node{Name: name, Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, CapacityGPUs: 8,
		UsedGPUs: used, Rack: rack, Ready: true}
}

// Cluster registers a Ready cluster with its inventory.
func (e *Env) Cluster(name string, nodes ...inventory.Node) {
	e.T.Helper()
	cl := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cl.Status.State = v1alpha1.ClusterReady
	clusters := store.NewCollection(e.Store, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	invs := store.NewCollection(e.Store, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	b, err := json.Marshal(inventory.Cluster{Name: name, Nodes: nodes, Labels: e.ClusterLabels})
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := clusters.Create(e.Ctx, name, cl); err != nil {
		e.T.Fatal(err)
	}
	rec := &registry.InventoryRecord{Cluster: name, Generation: 1, Received: e.Clock.Now(), Inventory: b}
	if _, err := invs.Create(e.Ctx, name, rec); err != nil {
		e.T.Fatal(err)
	}
}

// Submit submits a job of members×gpus in queue research and steps the clock.
func (e *Env) Submit(name string, members, gpus int32, mutate ...func(*v1alpha1.Job)) {
	e.T.Helper()
	w := testjob.New(name).Queue("research").Members(members).GPUs(gpus)
	for _, m := range mutate {
		w.With(m)
	}
	j := w.Obj()
	if _, _, _, err := e.Jobs.Submit(e.Ctx, j, false); err != nil {
		e.T.Fatal(err)
	}
	e.Clock.Step(time.Second)
}

// Job reads a job back.
func (e *Env) Job(name string) *v1alpha1.Job {
	e.T.Helper()
	j, _, err := e.Jobs.Get(e.Ctx, name)
	if err != nil {
		e.T.Fatal(err)
	}
	return j
}
