// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestMetricsOfRealProcesses starts shoal-hub and a shoal-agent as
// processes on a KWOK cluster of 2 HGX H100 nodes (16 GPUs), runs an
// 8-GPU job and leaves a 24-GPU job pending, then scrapes both /metrics
// endpoints and checks the values against that fleet.
func TestMetricsOfRealProcesses(t *testing.T) {
	skipShort(t)
	bins := buildShoal(t)
	cli := buildCLI(t)
	dir := t.TempDir()
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: dir, Clusters: 1, Profiles: []string{"hgx-h100"}, Nodes: 2,
		Out: testWriter{t}, DieWithParent: true, Shoal: bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	c := f.Workloads()[0].Name
	run := cliRunner(t, cli, f)
	run("", "queue", "create", "metrics")
	run(jobManifest("m-run", 1), "job", "submit", "-f", "-")
	waitJobPhase(t, run, "m-run", v1alpha1.JobRunning)
	run(jobManifest("m-wait", 3), "job", "submit", "-f", "-")

	gpus := func(state string) string {
		return fmt.Sprintf(`shoal_fleet_gpus{cluster=%s,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=%s}`, c, state)
	}
	want := map[string]float64{
		gpus("allocated"): 8, gpus("free"): 8, gpus("reserved"): 0, gpus("unhealthy"): 0, gpus("cordoned"): 0,
		`shoal_cluster_status{cluster=` + c + `,state=Ready}`:     1,
		`shoal_pending_workloads{queue=metrics}`:                  1,
		`shoal_pending_gpus{queue=metrics}`:                       24,
		`shoal_admitted_active_workloads{queue=metrics}`:          1,
		`shoal_queue_resource_usage{gpu_class=all,queue=metrics}`: 8,
		`shoal_jobs{phase=Running}`:                               1,
		`shoal_jobs{phase=Pending}`:                               1,
		`shoal_admission_wait_time_seconds_count{queue=metrics}`:  1,
		`shoal_dispatch_placed_to_prepared_seconds_count{}`:       1,
		`shoal_dispatch_prepared_to_running_seconds_count{}`:      1,
	}
	// The gauges are the scheduler's view at the end of its last cycle and
	// allocation moves from reserved once the agent's next inventory
	// counts the running members: poll until the hub shows the fleet.
	var hub map[string]float64
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		hub = scrape(t, f.Shoal.HTTP+"/metrics")
		for k, v := range want {
			if hub[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for k, v := range want {
			if hub[k] != v {
				t.Errorf("hub %s = %v, want %v", k, hub[k], v)
			}
		}
		t.Fatalf("hub metrics never matched the fleet; scraped:\n%s", dumpMetrics(hub, "shoal_"))
	}
	if age, ok := hub[`shoal_cluster_heartbeat_age_seconds{cluster=`+c+`}`]; !ok || age < 0 || age > 60 {
		t.Errorf("heartbeat age of %s = %v (present %v), want within the cluster grace", c, age, ok)
	}
	if _, ok := hub[`shoal_cluster_inventory_age_seconds{cluster=`+c+`}`]; !ok {
		t.Errorf("no inventory age for %s", c)
	}

	agent := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", f.Workloads()[0].Ports.ShoalHTTP))
	for k, min := range map[string]float64{
		`shoal_agent_heartbeats_total{result=ok}`: 1,
		`shoal_agent_local_pods_created_total{}`:  1,
	} {
		if agent[k] < min {
			t.Errorf("agent %s = %v, want at least %v", k, agent[k], min)
		}
	}
	// GitOps is off in this fleet: the sync histogram is registered and empty.
	if v, ok := agent[`shoal_gitops_sync_duration_seconds_count{}`]; !ok || v != 0 {
		t.Errorf("agent shoal_gitops_sync_duration_seconds_count = %v (present %v), want registered and 0", v, ok)
	}
}

func jobManifest(name string, members int) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: metrics
  gang:
    members: %d
    gpusPerMember: 8
  template:
    spec:
      containers:
      - name: main
        image: busybox
`, name, members)
}

func waitJobPhase(t *testing.T, run func(string, ...string) string, name string, phase v1alpha1.JobPhase) {
	t.Helper()
	var j v1alpha1.Job
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		if err := json.Unmarshal([]byte(run("", "job", "get", name, "-o", "json")), &j); err != nil {
			return false, err
		}
		return j.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("job %s is %s, want %s: %v (status %+v)", name, j.Status.Phase, phase, err, j.Status)
	}
}

// scrape reads a /metrics endpoint into name{label=value,...} → value
// (labels sorted; histograms as _count and _sum).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test scrape of a loopback endpoint
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := func(suffix string) string { return name + suffix + "{" + strings.Join(ls, ",") + "}" }
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key("_count")] = float64(m.GetHistogram().GetSampleCount())
				out[key("_sum")] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_COUNTER:
				out[key("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key("")] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func dumpMetrics(m map[string]float64, prefix string) string {
	var lines []string
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			lines = append(lines, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cliRunner returns a function that runs the shoal CLI against the fleet's
// hub with stdin and returns its output, failing the test on an error.
func cliRunner(t *testing.T, cli string, f *devfleet.Fleet) func(stdin string, args ...string) string {
	return func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), cli, append([]string{"--config", f.Shoal.Config}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// buildCLI builds the shoal CLI next to the daemons buildShoal built.
func buildCLI(t *testing.T) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(buildShoal(t).HubBinary), "shoal")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/shoal")
	cmd.Dir = filepath.Join("..", "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build shoal: %v\n%s", err, b)
	}
	return out
}
