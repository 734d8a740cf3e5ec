// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// benchFleet is a store holding a fleet whose GPUs are all in use, pending
// jobs that wait for them and finished jobs that no cycle places.
type benchFleet struct {
	ctx   context.Context
	st    *store.Store
	clock *clocktesting.FakeClock
}

// openBenchFleet starts a dedicated embedded etcd (no fsync: the cycle's
// reads are measured, not the disk) with clusters×nodes full 8-GPU nodes,
// pending jobs of 4×8 GPUs and finished ones.
func openBenchFleet(b *testing.B, clusters, nodes, pending, finished int) *benchFleet {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DataDir: b.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &benchFleet{ctx: ctx, st: st, clock: clk}
	if _, err := queues.NewCollection(st).Create(ctx, "research", &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}}); err != nil {
		b.Fatal(err)
	}
	for c := range clusters {
		f.cluster(b, fmt.Sprintf("c%03d", c), nodes, 8)
	}
	js := jobs.New(st, jobs.WithClock(clk))
	var proto *v1alpha1.Job
	for i := range pending {
		j := testjob.New(fmt.Sprintf("pending-%06d", i)).Queue("research").Members(4).GPUs(8).Obj()
		out, _, _, err := js.Submit(ctx, j, false)
		if err != nil {
			b.Fatal(err)
		}
		proto = out
		clk.Step(time.Millisecond)
	}
	all := store.NewCollection(st, jobs.Kind, store.JSONCodec[*v1alpha1.Job]())
	var ops []store.Op
	flush := func() {
		if _, err := st.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range finished {
		j := proto.DeepCopy()
		j.Name = fmt.Sprintf("done-%06d", i)
		j.Status.Phase = v1alpha1.JobSucceeded
		t := metav1.NewTime(clk.Now())
		j.Status.CompletionTime = &t
		ops = append(ops, all.PutOp(j.Name, j))
		if len(ops) == 100 {
			flush()
		}
	}
	if len(ops) > 0 {
		flush()
	}
	return f
}

// cluster registers a Ready cluster of nodes GPU nodes with used GPUs in use.
func (f *benchFleet) cluster(b *testing.B, name string, nodes, used int) {
	b.Helper()
	var ns []inventory.Node
	for n := range nodes {
		ns = append(ns, inventory.Node{Name: fmt.Sprintf("n%04d", n), Product: "NVIDIA-H100-80GB-HBM3", GPUs: 8,
			CapacityGPUs: 8, UsedGPUs: used, Rack: fmt.Sprintf("r%02d", n/16), Ready: true})
	}
	f.putInventory(b, name, ns, true)
}

// putInventory stores a cluster's inventory (and, when register, its
// Ready cluster record) as hub/registry does on a report.
func (f *benchFleet) putInventory(b *testing.B, name string, nodes []inventory.Node, register bool) int64 {
	b.Helper()
	if register {
		cl := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cl.Status.State = v1alpha1.ClusterReady
		clusters := store.NewCollection(f.st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
		if _, err := clusters.Create(f.ctx, name, cl); err != nil {
			b.Fatal(err)
		}
	}
	raw, err := json.Marshal(inventory.Cluster{Name: name, Nodes: nodes})
	if err != nil {
		b.Fatal(err)
	}
	invs := store.NewCollection(f.st, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	rec := &registry.InventoryRecord{Cluster: name, Generation: 1, Received: f.clock.Now(), Inventory: raw}
	rev, err := invs.Update(f.ctx, name, rec, 0)
	if register {
		rev, err = invs.Create(f.ctx, name, rec)
	}
	if err != nil {
		b.Fatal(err)
	}
	return rev
}

// BenchmarkCycle is one scheduling cycle on 10 clusters × 64 full 8-GPU
// nodes with 1,000 pending 4×8-GPU jobs that wait and many finished jobs
// (jobs are kept after they finish), and reports the cycle's p50 and p99:
// fresh lists the store every cycle (a scheduler that does not lead),
// cached decides on the watch-fed caches a leader keeps.
func BenchmarkCycle(b *testing.B) {
	for _, finished := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("finished=%d/pending=1000", finished), func(b *testing.B) {
			f := openBenchFleet(b, 10, 64, 1000, finished)
			b.Run("fresh", func(b *testing.B) {
				benchCycles(b, f, scheduler.New(f.st, scheduler.Config{Clock: f.clock}))
			})
			b.Run("cached", func(b *testing.B) { benchCachedCycles(b, f) })
		})
	}
}

// benchCycles runs b.N cycles (after one that explains every waiting job)
// with 1,000 jobs waiting and reports their p50 and p99.
func benchCycles(b *testing.B, f *benchFleet, s *scheduler.Scheduler) {
	b.Helper()
	benchCyclesWaiting(b, f, s, 1000)
}

// benchCyclesWaiting is benchCycles with waiting jobs waiting.
func benchCyclesWaiting(b *testing.B, f *benchFleet, s *scheduler.Scheduler, waiting int) {
	b.Helper()
	if res, err := s.Cycle(f.ctx, nil); err != nil || res.Waiting != waiting {
		b.Fatalf("first cycle: %+v, %v; want %d waiting", res, err, waiting)
	}
	var took []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := s.Cycle(f.ctx, nil)
		took = append(took, time.Since(start))
		if err != nil || res.Waiting != waiting {
			b.Fatalf("cycle: %+v, %v; want %d waiting", res, err, waiting)
		}
	}
	b.StopTimer()
	if os.Getenv("SHOAL_BENCH_CYCLES") != "" {
		b.Logf("cycles in order: %v", took)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkInventoryVisible is the time from an inventory report's store
// write (as hub/registry makes it on ReportInventory) to the leader's cache
// holding it, on 100 clusters of 1,000 8-GPU nodes (each report carries a
// cluster's whole inventory) while 1,000 pending and 10,000 finished jobs
// are stored. It reports the p50 and p99 of b.N reports, one cluster after
// another.
func BenchmarkInventoryVisible(b *testing.B) {
	f := openBenchFleet(b, 0, 0, 1000, 10_000)
	const clusters, nodes = 100, 1000
	inv := make([][]inventory.Node, clusters)
	for c := range clusters {
		for n := range nodes {
			inv[c] = append(inv[c], inventory.Node{Name: fmt.Sprintf("n%04d", n), Product: "NVIDIA-H100-80GB-HBM3",
				GPUs: 8, CapacityGPUs: 8, UsedGPUs: n % 9, Rack: fmt.Sprintf("r%02d", n/16), Ready: true})
		}
		f.putInventory(b, fmt.Sprintf("c%03d", c), inv[c], true)
	}
	s := scheduler.New(f.st, scheduler.Config{Clock: f.clock})
	stop, err := s.StartCaches(f.ctx, func() {})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	var took []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c := i % clusters
		inv[c][i%nodes].UsedGPUs = (inv[c][i%nodes].UsedGPUs + 1) % 9
		start := time.Now()
		rev := f.putInventory(b, fmt.Sprintf("c%03d", c), inv[c], false)
		for s.CacheRevision() < rev {
			time.Sleep(100 * time.Microsecond)
		}
		took = append(took, time.Since(start))
		i++
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkCycleFXL is BenchmarkCycle's cached cycle on F-XL: 100 clusters
// × 1,000 full 8-GPU nodes, 1,000 pending jobs that wait.
//
//	SHOAL_BENCH_SCALE=1 go test ./hub/scheduler -run '^$' -bench CycleFXL -benchtime 10x
func BenchmarkCycleFXL(b *testing.B) {
	if os.Getenv("SHOAL_BENCH_SCALE") == "" {
		b.Skip("F-XL: set SHOAL_BENCH_SCALE=1")
	}
	benchCachedCycles(b, openBenchFleet(b, 100, 1000, 1000, 0))
}

// benchCachedCycles runs benchCycles on a scheduler deciding on the
// watch-fed caches a leader keeps.
func benchCachedCycles(b *testing.B, f *benchFleet) {
	b.Helper()
	s := scheduler.New(f.st, scheduler.Config{Clock: f.clock})
	stop, err := s.StartCaches(f.ctx, func() {})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	benchCycles(b, f, s)
}

// BenchmarkCycleFXLPlaced is BenchmarkCycleFXL with the fleet's GPUs held
// by 25,000 booked gangs of 4×8 GPUs (not started: their GPUs are
// subtracted from the inventories) and more pending that wait (1,000, and
// 35,000 as in the 100,000-job run of docs/scale.md): the cycle of a hub
// whose fleet is full of placed work.
//
//	SHOAL_BENCH_SCALE=1 go test ./hub/scheduler -run '^$' -bench CycleFXLPlaced -benchtime 10x
func BenchmarkCycleFXLPlaced(b *testing.B) {
	if os.Getenv("SHOAL_BENCH_SCALE") == "" {
		b.Skip("F-XL: set SHOAL_BENCH_SCALE=1")
	}
	for _, waiting := range []int{1000, 35_000} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) { benchPlaced(b, waiting) })
	}
}

func benchPlaced(b *testing.B, waiting int) {
	const clusters, nodes, placed = 100, 1000, 25_000
	f := openBenchFleet(b, 0, 0, placed, 0)
	for c := range clusters {
		f.cluster(b, fmt.Sprintf("c%03d", c), nodes, 0)
	}
	s := scheduler.New(f.st, scheduler.Config{Clock: f.clock})
	stop, err := s.StartCaches(f.ctx, func() {})
	if err != nil {
		b.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	for booked := 0; booked < placed; {
		res, err := s.Cycle(f.ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Placed) == 0 {
			b.Fatalf("a cycle placed nothing with %d of %d booked", booked, placed)
		}
		booked += len(res.Placed)
	}
	js := jobs.New(f.st, jobs.WithClock(f.clock))
	var last int64
	for i := range waiting {
		j := testjob.New(fmt.Sprintf("wait-%06d", i)).Queue("research").Members(4).GPUs(8).Obj()
		_, rev, _, err := js.Submit(f.ctx, j, false)
		if err != nil {
			b.Fatal(err)
		}
		last = rev
	}
	for s.JobsCacheRevision() < last { // the first measured cycle must see every waiting job
		time.Sleep(time.Millisecond)
	}
	benchCyclesWaiting(b, f, s, waiting)
	// The heap the leading scheduler holds (its caches, the last cycle's
	// snapshot and forms): with it, and once it is stopped and dropped.
	with := liveHeap()
	stop()
	stopped, s = true, nil
	b.ReportMetric((with-liveHeap())/(1<<20), "scheduler-MiB")
}

// liveHeap is the Go heap after a collection, in bytes.
func liveHeap() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
