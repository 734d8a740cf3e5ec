// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/bench/intake"
)

// BenchmarkIntake measures the job intake through the real shoal-hub (its
// hub kube-apiserver dry-runs every pod template; its embedded etcd
// fsyncs) on a fleet of one hgx-h100 cluster: for each batch size of
// INTAKE_BATCHES (default "1,100"; 1 is Jobs/Submit, more Jobs/SubmitBatch)
// and each of INTAKE_STREAMS (default "100"; batches of that many jobs per
// message of Jobs/SubmitStream; set empty: none)
// a fresh fleet takes INTAKE_JOBS jobs (default 20,000) from
// INTAKE_CLIENTS clients (default 16) in INTAKE_STAGES stages (default 10),
// each stage stopping the run once INTAKE_MAX_DURATION (default 10m) has
// passed. With SHOAL_BENCH_OUT set, the figures go to intake.json there.
//
//	go test ./test/bench -run '^$' -bench Intake -benchtime 1x
func BenchmarkIntake(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a fleet of Kubernetes processes")
	}
	opts := intake.Options{
		Jobs: envInt(b, "INTAKE_JOBS", 20000), Clients: envInt(b, "INTAKE_CLIENTS", 16),
		Stages: envInt(b, "INTAKE_STAGES", 10), Queue: "bench",
		MaxDuration: envDuration(b, "INTAKE_MAX_DURATION", 10*time.Minute),
	}
	var modes []intake.Options
	for _, n := range envSizes(b, "INTAKE_BATCHES", "1,100") {
		o := opts
		o.Batch = n
		modes = append(modes, o)
	}
	for _, n := range envSizes(b, "INTAKE_STREAMS", "100") {
		o := opts
		o.Batch, o.Stream = n, true
		modes = append(modes, o)
	}
	bins, cli := build(b)
	var results []intake.Result
	for b.Loop() {
		results = results[:0]
		for _, o := range modes {
			results = append(results, runIntake(b, bins, cli, o))
		}
	}
	for _, r := range results {
		mode := "batch"
		if r.Method == "Jobs/SubmitStream" {
			mode = "stream"
		}
		b.ReportMetric(r.JobsPerSec, "jobs/s-"+mode+"-"+strconv.Itoa(r.Batch))
	}
	if dir := os.Getenv("SHOAL_BENCH_OUT"); dir != "" {
		data, _ := json.MarshalIndent(map[string]any{"intake": results}, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "intake.json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// runIntake starts a fleet, creates the bench queue and offers the load.
func runIntake(b *testing.B, bins *devfleet.ShoalOptions, cli string, o intake.Options) intake.Result {
	f := upFleet(b, devfleet.Options{Dir: b.TempDir(), Profiles: []string{"hgx-h100"}, DieWithParent: true, Shoal: bins})
	defer func() { _ = f.Stop() }()
	runCLI(b, cli, f.Shoal.Config, "queue", "create", o.Queue)
	cfg, err := configv1alpha1.Load(f.Shoal.Config)
	if err != nil {
		b.Fatal(err)
	}
	hctx, err := cfg.Context("")
	if err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	o.MetricsURL = f.Shoal.HTTP + "/metrics"
	dial := func() (*grpc.ClientConn, error) {
		return grpc.NewClient(hctx.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	}
	res, err := intake.Run(b.Context(), dial, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s, batch %d, %d clients: %d jobs in %.1f s, %.0f jobs/s", res.Method, res.Batch, res.Clients,
		res.Accepted, res.Seconds, res.JobsPerSec)
	for _, s := range res.Stages {
		b.Logf("  stored %6d-%6d: %7.0f jobs/s; call p50/p99 client %.1f/%.1f ms, hub %.1f/%.1f ms",
			s.StoredBefore, s.StoredAfter, s.JobsPerSec, s.ClientP50ms, s.ClientP99ms, s.ServerP50ms, s.ServerP99ms)
	}
	return res
}
