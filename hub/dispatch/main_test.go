package dispatch_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// shared is one embedded etcd; every test opens its own key prefix on it.
var shared *store.Store

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "shoal-dispatch-test-")
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

var prefixes atomic.Int64

// env is one test's view of the fleet: its own store prefix, a fake clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	clock *clocktesting.FakeClock
	jobs  *jobs.Service
}

func newEnv(t *testing.T) *env {
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
	e := &env{t: t, ctx: ctx, st: st, clock: clk, jobs: jobs.New(st, jobs.WithClock(clk))}
	if _, err := queues.NewCollection(st).Create(ctx, "research", &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// node is an 8-GPU H100 node in a rack with used GPUs.
func node(name, rack string, used int) inventory.Node {
	return inventory.Node{Name: name, Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8, CapacityGPUs: 8,
		UsedGPUs: used, Rack: rack, Ready: true}
}

// cluster registers a Ready cluster with its inventory.
func (e *env) cluster(name string, nodes ...inventory.Node) {
	e.t.Helper()
	cl := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cl.Status.State = v1alpha1.ClusterReady
	clusters := store.NewCollection(e.st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	invs := store.NewCollection(e.st, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	b, err := json.Marshal(inventory.Cluster{Name: name, Nodes: nodes})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := clusters.Create(e.ctx, name, cl); err != nil {
		e.t.Fatal(err)
	}
	rec := &registry.InventoryRecord{Cluster: name, Generation: 1, Received: e.clock.Now(), Inventory: b}
	if _, err := invs.Create(e.ctx, name, rec); err != nil {
		e.t.Fatal(err)
	}
}

// submit submits a job of members×gpus in queue research.
func (e *env) submit(name string, members, gpus int32, mutate ...func(*v1alpha1.Job)) {
	e.t.Helper()
	j := &v1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.JobSpec{
		Queue: "research", Gang: v1alpha1.Gang{Members: members, GPUsPerMember: gpus},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "trainer", Image: "busybox"}}}},
	}}
	for _, m := range mutate {
		m(j)
	}
	if _, _, _, err := e.jobs.Submit(e.ctx, j, false); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Step(time.Second)
}

func (e *env) job(name string) *v1alpha1.Job {
	e.t.Helper()
	j, _, err := e.jobs.Get(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}
