// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/framework"
)

const benchNodes = 5000

// BenchmarkInventoryLatency5000Nodes runs a full agent against a workload
// cluster of 5,000 GPU nodes and measures the time from a node change (a
// cordon toggle) to the hub holding an inventory that reflects it, plus the
// agent process's idle CPU and RSS. Run with:
//
//	go test ./test/integration/agent -run '^$' -bench InventoryLatency -benchtime 50x
func BenchmarkInventoryLatency5000Nodes(b *testing.B) {
	if testing.Short() {
		b.Skip("starts kube-apiservers")
	}
	env := setupBench(b)
	cs, ctx := env.cs, b.Context()
	idleCPU, rss := idleFootprint(10 * time.Second)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := nodeName(i % benchNodes)
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		want := !n.Spec.Unschedulable
		n.Spec.Unschedulable = want
		start := time.Now()
		if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitReport(b, func(c fedinv.Cluster) bool { return cordoned(c, name) == want }, time.Minute)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	b.ReportMetric(idleCPU, "idle-millicores")
	b.ReportMetric(rss, "rss-MiB")
	b.Logf("nodes=%d changes=%d p50=%v p99=%v idle=%.1f millicores rss=%.0f MiB (whole test process: agent + in-test hub)",
		benchNodes, len(lat), p50, p99, idleCPU, rss)
}

// benchEnv is a workload cluster of benchNodes nodes with a running agent,
// shared by every run of the benchmark (b.N grows between runs).
type benchEnv struct {
	cs   kubernetes.Interface
	stop func()
}

var (
	benchOnce sync.Once
	bench     *benchEnv
	benchErr  error
)

func setupBench(b *testing.B) *benchEnv {
	benchOnce.Do(func() { bench, benchErr = startBench() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func startBench() (*benchEnv, error) {
	cp, err := framework.StartControlPlane()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	env := &benchEnv{cs: cs}
	done := make(chan error, 1)
	env.stop = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Println("agent:", err)
		}
		_ = cp.Stop()
	}
	fail := func(err error) (*benchEnv, error) { cancel(); _ = cp.Stop(); return nil, err }
	if err := createNodes(ctx, cs, benchNodes); err != nil {
		return fail(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-system"}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	hub.reported = make(chan fedinv.Cluster, 1)
	a, err := agent.New(agent.Config{HubAddress: hub.addr, Token: hub.token, CAHash: hub.caHash(), Cluster: "bench",
		Local: rest.CopyConfig(cp.Config), KubeletListen: "127.0.0.1:0", KubeletAddress: "127.0.0.1",
		KubeletClientCAFile: hubCP.KubeletClientCA.CAFile, Version: "bench"})
	if err != nil {
		return fail(err)
	}
	go func() { done <- a.Run(ctx) }()
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case c := <-hub.reported:
			if len(c.Nodes) == benchNodes {
				return env, nil
			}
		case <-deadline:
			env.stop()
			return nil, fmt.Errorf("no inventory of %d nodes within 5 minutes", benchNodes)
		}
	}
}

func nodeName(i int) string { return fmt.Sprintf("gpu-%05d", i) }

func cordoned(c fedinv.Cluster, name string) bool {
	i := sort.Search(len(c.Nodes), func(i int) bool { return c.Nodes[i].Name >= name })
	return i < len(c.Nodes) && c.Nodes[i].Name == name && c.Nodes[i].Unschedulable
}

func waitReport(b *testing.B, ok func(fedinv.Cluster) bool, timeout time.Duration) {
	b.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c := <-hub.reported:
			if ok(c) {
				return
			}
		case <-deadline:
			b.Fatal("the hub's inventory never reflected the change")
		}
	}
}

// createNodes creates n 8-GPU H100 nodes, 16 per rack, with 16 workers.
func createNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				node := gpuNode(nodeName(i), "NVIDIA-H100-80GB-HBM3", "r"+strconv.Itoa(i/16), map[string]int64{fedinv.ResourceGPU: 8})
				if err := createNode(ctx, cs, node); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// idleFootprint measures this process's CPU over d (in millicores) and its RSS (MiB).
func idleFootprint(d time.Duration) (float64, float64) {
	runtime.GC()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, t0 := cpu(), time.Now()
	time.Sleep(d) // measuring idle CPU needs a wall-clock window
	millicores := float64(cpu()-c0) / float64(time.Since(t0)) * 1000
	return millicores, rssMiB()
}

func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
