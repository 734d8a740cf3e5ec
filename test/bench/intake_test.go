// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
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
// passed. The load starts once the cluster is schedulable, so its first
// 128 jobs are placed and start at once, on the same two cores; with
// INTAKE_CORDON=1 the cluster is cordoned first: no gang starts, and the
// figures are the hub's own (every job is still explained). With
// SHOAL_BENCH_OUT set, the figures go to intake.json there.
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
		Cordon:      os.Getenv("INTAKE_CORDON") == "1",
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

// waitSchedulable waits until the hub has the cluster Ready, its agent
// not known to be cut off from the hub cluster, with its inventory: what
// the scheduler places on (an agent's first heartbeats say it has not
// reached the hub cluster yet): the load then always meets the
// cluster filling up and its gangs starting at its beginning, not at
// whatever point of the run the first reports happen to land.
func waitSchedulable(ctx context.Context, dial func() (*grpc.ClientConn, error), cluster string) error {
	conn, err := dial()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	cl := shoalv1.NewClustersClient(conn)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		obj, err := cl.GetCluster(ctx, &shoalv1.GetClusterRequest{Name: cluster})
		if err != nil {
			return false, nil
		}
		var c v1alpha1.Cluster
		if json.Unmarshal(obj.GetJson(), &c) != nil || c.Status.State != v1alpha1.ClusterReady ||
			meta.IsStatusConditionFalse(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable) {
			return false, nil
		}
		inv, err := cl.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: cluster})
		if err != nil {
			return false, nil
		}
		var ic fedinv.Cluster
		return json.Unmarshal(inv.GetJson(), &ic) == nil && len(ic.Nodes) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s not Ready with its inventory on the hub: %w", cluster, err)
	}
	return nil
}

// profileHub starts, when INTAKE_CPU_PROFILE names a duration (the hub
// then needs --profiling in SHOAL_BENCH_HUB_ARGS), a CPU profile of the
// hub that long from the mode's first submission, written to
// INTAKE_PROFILE_DIR (default bench/results) as
// intake-hub-cpu-<method>-<batch>.pprof; the returned func waits for it.
func profileHub(b *testing.B, f *devfleet.Fleet, o intake.Options) func() {
	d := envDuration(b, "INTAKE_CPU_PROFILE", 0)
	if d <= 0 {
		return func() {}
	}
	dir := os.Getenv("INTAKE_PROFILE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "bench", "results")
	}
	mode := "batch"
	if o.Stream {
		mode = "stream"
	}
	file := filepath.Join(dir, fmt.Sprintf("intake-hub-cpu-%s-%d.pprof", mode, o.Batch))
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", f.Shoal.HTTP, int(d.Seconds()))
		resp, err := http.Get(url) //nolint:noctx // ends with the profile
		if err != nil {
			b.Logf("hub CPU profile: %v", err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == http.StatusOK {
			err = os.WriteFile(file, data, 0o644)
		} else if err == nil {
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		if err != nil {
			b.Logf("hub CPU profile: %v", err)
			return
		}
		b.Logf("hub CPU profile of %s: %s", d, file)
	}()
	return func() { <-done }
}

// runIntake starts a fleet, creates the bench queue and offers the load.
// With INTAKE_FLEET_DIR set the fleet lives there and its logs stay after
// the run (one mode at a time: each mode's fleet starts afresh in it).
func runIntake(b *testing.B, bins *devfleet.ShoalOptions, cli string, o intake.Options) intake.Result {
	dir := b.TempDir()
	if d := os.Getenv("INTAKE_FLEET_DIR"); d != "" {
		dir = d
	}
	f := upFleet(b, devfleet.Options{Dir: dir, Profiles: []string{"hgx-h100"}, DieWithParent: true, Shoal: bins})
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
	for _, c := range f.Clusters {
		if c.Role != devfleet.RoleWorkload {
			continue
		}
		if err := waitSchedulable(b.Context(), dial, c.Name); err != nil {
			b.Fatal(err)
		}
		if o.Cordon {
			runCLI(b, cli, f.Shoal.Config, "cluster", "cordon", c.Name)
		}
	}
	prof := profileHub(b, f, o)
	res, err := intake.Run(b.Context(), dial, o)
	if err != nil {
		b.Fatal(err)
	}
	prof()
	b.Logf("%s, batch %d, %d clients: %d jobs in %.1f s, %.0f jobs/s", res.Method, res.Batch, res.Clients,
		res.Accepted, res.Seconds, res.JobsPerSec)
	b.Logf("  store transactions that failed a guard and were written again: %d", res.StoreConflicts)
	if len(res.BatchTransactions) > 0 {
		b.Logf("  batch transactions: %d committed, %d failed for a queue's status and tried again, %d split into single writes",
			res.BatchTransactions["committed"], res.BatchTransactions["queue_moved"], res.BatchTransactions["split"])
	}
	for _, s := range res.Stages {
		b.Logf("  stored %6d-%6d: %7.0f jobs/s; call p50/p99 client %.1f/%.1f ms, hub %.1f/%.1f ms",
			s.StoredBefore, s.StoredAfter, s.JobsPerSec, s.ClientP50ms, s.ClientP99ms, s.ServerP50ms, s.ServerP99ms)
	}
	return res
}
