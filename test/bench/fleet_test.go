// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// build builds shoal-hub, shoal-agent and the shoal CLI into a directory
// removed after the benchmark. SHOAL_BENCH_HUB_ARGS adds shoal-hub flags
// (space-separated, such as --profiling to read the hub's profiles while
// a benchmark runs).
func build(b *testing.B) (*devfleet.ShoalOptions, string) {
	b.Helper()
	out := b.TempDir()
	cmd := exec.Command("go", "build", "-o", out+"/", "./cmd/shoal-hub", "./cmd/shoal-agent", "./cmd/shoal")
	cmd.Dir = filepath.Join("..", "..")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, o)
	}
	return &devfleet.ShoalOptions{HubBinary: filepath.Join(out, "shoal-hub"), AgentBinary: filepath.Join(out, "shoal-agent"),
			HubArgs: strings.Fields(os.Getenv("SHOAL_BENCH_HUB_ARGS"))},
		filepath.Join(out, "shoal")
}

// countSeries scrapes the running hub, checks its fleet-sized families
// against Series for the fleet (its clusters' pools, the queues of
// examples/queues.yaml and the bench queue, nothing held after the load)
// and logs them, the rest of the hub and the total.
func countSeries(b *testing.B, f *devfleet.Fleet) {
	b.Helper()
	got, err := scrape(f.Shoal.HTTP + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	// Each profile's nodes carry one GPU product (their
	// nvidia.com/gpu.product label), so each cluster has one pool.
	demo := Shape{Clusters: len(f.Workloads()), Pools: 1, Queues: []QueueShape{
		{Quotas: 1},            // research: h100
		{Quotas: 2, Limits: 1}, // research/nlp: h100 (with a borrowing limit), mig-1g.10gb
		{Placed: true},         // bench, every job's queue
	}}
	want := Series(demo)
	for fam, n := range want {
		if got[fam] != n {
			b.Errorf("%s: %d series in the hub's registry, %d by the formula", fam, got[fam], n)
		}
	}
	var fleet, rest, total int
	var lines []string
	for fam, n := range got {
		total += n
		if _, ok := want[fam]; ok {
			fleet += n
		} else {
			rest += n
		}
		lines = append(lines, fam+" "+strconv.Itoa(n))
	}
	sort.Strings(lines)
	b.Logf("hub series: %d fleet-sized (formula %d), %d others, %d in all:\n%s", fleet, Total(want), rest, total, strings.Join(lines, "\n"))
	b.ReportMetric(float64(total), "series-demo-hub")
	b.ReportMetric(float64(fleet), "series-demo-fleet-part")
	if dir := os.Getenv("SHOAL_BENCH_OUT"); dir != "" {
		data, _ := json.MarshalIndent(map[string]any{"demo": got, "formulaDemo": want, "formula100": Series(Fleet100())}, "", "  ")
		_ = os.WriteFile(filepath.Join(dir, "series.json"), data, 0o644)
	}
}
