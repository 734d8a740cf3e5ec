// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// benchJob is shaped like a stored Job (typed, like apis/v1alpha1): metadata,
// a gang spec, a pod template and a status, about 2 KiB of JSON.
type benchJob struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   benchMeta    `json:"metadata"`
	Spec       benchJobSpec `json:"spec"`
	Status     struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

type benchMeta struct {
	Name   string            `json:"name"`
	UID    string            `json:"uid"`
	Labels map[string]string `json:"labels"`
}

type benchJobSpec struct {
	Queue string `json:"queue"`
	Gang  struct {
		Members       int    `json:"members"`
		GPUsPerMember int    `json:"gpusPerMember"`
		Topology      string `json:"topology"`
	} `json:"gang"`
	Containers []benchContainer `json:"containers"`
}

type benchContainer struct {
	Name    string            `json:"name"`
	Image   string            `json:"image"`
	Command []string          `json:"command"`
	Env     []benchEnv        `json:"env"`
	Limits  map[string]string `json:"limits"`
}

type benchEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func newBenchJob(name string) benchJob {
	j := benchJob{APIVersion: "shoal.dev/v1alpha1", Kind: "Job"}
	j.Metadata = benchMeta{Name: name, UID: "0b6c3f3e-3c1a-4a53-9d3f-6f5c6b8e0d41",
		Labels: map[string]string{"team": "research", "project": "llm-pretrain", "priority": "batch"}}
	j.Spec.Queue = "org/research/llm"
	j.Spec.Gang.Members, j.Spec.Gang.GPUsPerMember, j.Spec.Gang.Topology = 8, 8, "rack"
	c := benchContainer{Name: "trainer", Image: "registry.example.com/research/trainer:v1.2.3",
		Command: []string{"torchrun", "--nnodes=8", "--nproc-per-node=8", "train.py", "--config=configs/llm-7b.yaml"},
		Limits:  map[string]string{"nvidia.com/gpu": "8", "memory": "1600Gi", "cpu": "96"}}
	for i := range 15 {
		c.Env = append(c.Env, benchEnv{Name: fmt.Sprintf("ENV_VAR_%02d", i), Value: strings.Repeat("v", 60)})
	}
	j.Spec.Containers = []benchContainer{c}
	j.Status.Phase = "Pending"
	return j
}

// openBench starts a dedicated embedded etcd.
func openBench(b *testing.B, ec store.EmbeddedConfig) *store.Store {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, store.Config{DataDir: b.TempDir(), Embedded: ec})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkCreate measures submit-like Create throughput of ~2 KiB jobs from
// 16 concurrent clients against embedded etcd; the jobs/s metric is the
// figure to compare with the 1,000 jobs/s target.
func BenchmarkCreate(b *testing.B) {
	for _, mode := range []struct {
		name string
		cfg  store.EmbeddedConfig
	}{
		{"fsync", store.EmbeddedConfig{}},
		{"fsync-network-client", store.EmbeddedConfig{NetworkClient: true}},
		{"UnsafeNoFsync", store.EmbeddedConfig{UnsafeNoFsync: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			s := openBench(b, mode.cfg)
			c := store.NewCollection(s, "jobs", store.JSONCodec[benchJob]())
			size := len(must[[]byte](b)(store.JSONCodec[benchJob]().Marshal(newBenchJob("job-0000000"))))
			var seq atomic.Int64
			const clients = 16
			b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			ctx := context.Background()
			cpu0 := processCPU(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := fmt.Sprintf("job-%07d", seq.Add(1))
					if _, err := c.Create(ctx, name, newBenchJob(name)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			// This machine is shared: jobs per CPU-second (client, gRPC and
			// the embedded etcd together) is steadier than jobs/s.
			b.ReportMetric(float64(b.N)/(processCPU(b)-cpu0).Seconds(), "jobs/cpu-s")
			b.ReportMetric(float64(size), "bytes/job")
		})
	}
}

// BenchmarkList measures List latency with 100k stored ~2 KiB jobs: the
// first page of 500, a full listing in pages of 500 at one revision, and a
// full listing with Limit 0 (chunks of 1,000 inside List).
func BenchmarkList(b *testing.B) {
	if testing.Short() {
		b.Skip("loads 100k objects")
	}
	const total = 100_000
	s := openBench(b, store.EmbeddedConfig{})
	c := store.NewCollection(s, "jobs", store.JSONCodec[benchJob]())
	load(b, s, c, total)
	ctx := context.Background()
	b.Run("page500", func(b *testing.B) {
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			res, err := c.List(ctx, store.ListOptions{Limit: 500})
			if err != nil || len(res.Items) != 500 {
				b.Fatalf("%d items, %v", len(res.Items), err)
			}
		}
	})
	b.Run("all-in-pages-of-500", func(b *testing.B) {
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			n, opts := 0, store.ListOptions{Limit: 500}
			for {
				res, err := c.List(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				n += len(res.Items)
				if res.Continue == "" {
					break
				}
				opts.Continue = res.Continue
			}
			if n != total {
				b.Fatalf("listed %d, want %d", n, total)
			}
		}
	})
	b.Run("all-limit0", func(b *testing.B) {
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			res, err := c.List(ctx, store.ListOptions{})
			if err != nil || len(res.Items) != total {
				b.Fatalf("%d items, %v", len(res.Items), err)
			}
		}
	})
}

// processCPU is the user+system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per operation since cpu0 (steadier
// than wall time on a shared machine).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// load writes n jobs in transactions of 100 puts.
func load(b *testing.B, s *store.Store, c *store.Collection[benchJob], n int) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 100 {
		txn := s.Txn(ctx)
		for j := i; j < i+100 && j < n; j++ {
			name := fmt.Sprintf("job-%07d", j)
			txn.Then(c.PutOp(name, newBenchJob(name)))
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetWhileWriting measures a point Get of a ~2 KiB job (p50 and
// p99 per read, one reader) while 16 clients create jobs as fast as they
// go in on the embedded etcd with fsync: the reads an API call makes
// before it writes (the caller's user record) and a dispatcher's reads,
// on a busy hub.
func BenchmarkGetWhileWriting(b *testing.B) {
	s := openBench(b, store.EmbeddedConfig{})
	c := store.NewCollection(s, "jobs", store.JSONCodec[benchJob]())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.Create(ctx, "read-me", newBenchJob("read-me")); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	done := make(chan struct{})
	const writers = 16
	for range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				name := fmt.Sprintf("job-%07d", seq.Add(1))
				if _, err := c.Create(ctx, name, newBenchJob(name)); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the writers at full speed
	lat := make([]time.Duration, 0, b.N)
	written := seq.Load()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, _, err := c.Get(ctx, "read-me"); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	cancel()
	for range writers {
		<-done
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(seq.Load()-written)/b.Elapsed().Seconds(), "writes/s")
}
