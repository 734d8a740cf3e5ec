// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
)

// TestHarness runs the harness small (5 clusters × 20 nodes of the default
// profiles, 200 jobs of 1–2 s) and checks it works: every job is placed,
// runs and succeeds, no GPU is booked twice, and every figure is produced.
func TestHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub cluster and shoal-hub")
	}
	// The wait is generous: on a quiet 2-core machine the jobs finish in
	// about a minute, but this one is shared.
	cfg := Config{Clusters: 5, Nodes: 20, Jobs: 200, WaitFinished: true, RunMin: time.Second, RunMax: 2 * time.Second,
		Timeout: 4 * time.Minute, InventoryProbes: 6}
	res := run(t, cfg)
	if len(res.SubmitErrors) > 0 {
		t.Errorf("submissions refused: %v", res.SubmitErrors)
	}
	if got := res.Jobs.Phases[string(v1alpha1.JobSucceeded)]; got != cfg.Jobs {
		t.Errorf("%d of %d jobs succeeded; phases %v", got, cfg.Jobs, res.Jobs.Phases)
	}
	if res.Jobs.Placed != cfg.Jobs || res.Jobs.Ran != cfg.Jobs {
		t.Errorf("placed %d, ran %d of %d jobs", res.Jobs.Placed, res.Jobs.Ran, cfg.Jobs)
	}
	members := 0
	for i := range cfg.Jobs {
		members += int(cfg.buildJob(i).Spec.Gang.Members)
	}
	if res.MembersFinished < members {
		t.Errorf("the kubelets finished %d members, the jobs have %d", res.MembersFinished, members)
	}
	if len(res.Overbooked) > 0 {
		t.Errorf("GPUs booked twice: %v", res.Overbooked)
	}
	if res.Cycle.Count == 0 || res.Cycle.P99 <= 0 {
		t.Errorf("no scheduling cycle measured: %+v", res.Cycle)
	}
	// A scrape may fall between a cycle's two observations: one apart.
	if d := int64(res.CycleCPU.Count) - int64(res.Cycle.Count); d < -1 || d > 1 || res.CycleCPU.Mean > res.Cycle.Mean {
		t.Errorf("cycles' CPU %+v against their wall time %+v: want one sample a cycle, no more CPU than wall time", res.CycleCPU, res.Cycle)
	}
	if res.SubmitToPlaced.N != cfg.Jobs || res.SubmitToPlaced.P99 <= 0 {
		t.Errorf("submit → placed measured for %d jobs (p99 %v s), want %d", res.SubmitToPlaced.N, res.SubmitToPlaced.P99, cfg.Jobs)
	}
	if res.InventoryError != "" || res.InventoryToHub.N == 0 {
		t.Errorf("inventory → hub: %d probes, error %q", res.InventoryToHub.N, res.InventoryError)
	}
	if res.HubRSSMiB <= 0 {
		t.Errorf("hub RSS %v MiB", res.HubRSSMiB)
	}
	wantItems := map[string]int{"all": cfg.Jobs}
	for _, l := range res.Lists {
		if strings.Contains(l.Filter, "matches none") {
			wantItems[l.Filter] = 0
		}
		if want, ok := wantItems[l.Filter]; ok && l.Items != want {
			t.Errorf("list %s: %d jobs, want %d", l.Filter, l.Items, want)
		}
	}
	if len(res.Lists) != 3 {
		t.Errorf("lists timed: %+v", res.Lists)
	}
}

// TestBenchScale is make bench-scale: the configuration of the SCALE_*
// environment (FromEnv; F-XL by default), its result written as JSON to
// the directory SCALE_OUT. Without SCALE_OUT it is skipped.
func TestBenchScale(t *testing.T) {
	out := os.Getenv("SCALE_OUT")
	if out == "" || testing.Short() {
		t.Skip("make bench-scale sets SCALE_OUT")
	}
	cfg, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CPUProfile > 0 {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.ProfileFile = filepath.Join(out, "scale-hub-cpu-"+time.Now().UTC().Format("20060102T150405Z")+".pprof")
	}
	if cfg.HeapProfile {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.HeapProfileFile = filepath.Join(out, "scale-hub-heap-"+time.Now().UTC().Format("20060102T150405Z")+".pprof")
	}
	res := run(t, cfg)
	stamp := time.Now().UTC().Format("20060102T150405Z")
	commit, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	doc := map[string]any{"date": stamp, "commit": strings.TrimSpace(string(commit)),
		"machine": map[string]any{"cpu": cpu, "cores": runtime.NumCPU(), "go": runtime.Version()}, "scale": res}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(out, "scale-"+stamp+".json")
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("result in %s:\n%s", file, b)
}

// run builds shoal-hub, starts the harness (agent and hub logs under a
// directory kept when the test fails), runs the load and returns the result.
func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	if err := framework.CheckBinaries(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "shoal-scale-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SHOAL_KEEP_FLEET") != "" {
			t.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	bin := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/shoal-hub")
	build.Dir = filepath.Join("..", "..")
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
	logToFile(t, filepath.Join(dir, "agents.log"))
	cfg.HubBinary, cfg.Dir = filepath.Join(bin, "shoal-hub"), filepath.Join(dir, "fleet")
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout+15*time.Minute)
	defer cancel()
	progress := func(format string, args ...any) {
		t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	h, res, err := Start(ctx, cfg, progress)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if err := h.Load(ctx, res); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("result:\n%s", b)
	return res
}

// logToFile sends klog's output (every in-process agent's) to path, at
// verbosity $SCALE_AGENT_V (default 0).
func logToFile(t *testing.T, path string) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "log_file": path,
		"stderrthreshold": "FATAL", "one_output": "true", "v": cmp.Or(os.Getenv("SCALE_AGENT_V"), "0")} {
		if err := fs.Set(k, v); err != nil {
			t.Fatal(fmt.Errorf("klog flag %s: %w", k, err))
		}
	}
	t.Cleanup(klog.Flush)
}
