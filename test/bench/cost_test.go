// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// The job load each mode runs: rounds of gangs submitted together, waited
// for until all run, then cancelled.
const (
	rounds        = 8
	jobsPerRound  = 12
	membersPerJob = 2
	scrapeEvery   = time.Second
	settle        = 5 * time.Second
	pairs         = 2
)

// usage is a process's CPU time and memory.
type usage struct {
	cpu      time.Duration // user + system
	rss, hwm int64         // bytes: resident now and at its peak
}

// BenchmarkObservabilityCost runs the same job load through a real
// shoal-hub on the demo fleet's shape (shoal dev up: hgx-h100,
// gb200-nvl72, a100-mig; examples/queues.yaml) twice: "off" (tracing off,
// /metrics not scraped) and "on" (every attempt traced at ratio 1 to an
// in-process OTLP receiver, the agents too; /metrics scraped every
// second), and reports the hub's CPU seconds over the load and its resident
// memory for each, and their ratios. It then counts the series of the
// running hub's registry and checks the fleet-sized families against
// Series for the fleet it built, and reports Series for 100 clusters.
func BenchmarkObservabilityCost(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a fleet of Kubernetes processes twice")
	}
	bins, cli := build(b)
	for b.Loop() {
		// Pairs of runs, off then on, so that the spread between pairs
		// shows what is noise of the machine.
		var off, on usage
		lo, hi := 0.0, 0.0
		for i := range pairs {
			o := measure(b, bins, cli, false, false)
			n := measure(b, bins, cli, true, i == 0)
			r := n.cpu.Seconds() / o.cpu.Seconds()
			b.Logf("pair %d: hub CPU off %.2f s, on %.2f s (ratio %.3f); RSS off %.1f MiB, on %.1f MiB",
				i, o.cpu.Seconds(), n.cpu.Seconds(), r, float64(o.rss)/(1<<20), float64(n.rss)/(1<<20))
			if i == 0 || r < lo {
				lo = r
			}
			hi = max(hi, r)
			off.cpu, on.cpu = off.cpu+o.cpu, on.cpu+n.cpu
			off.rss, on.rss = max(off.rss, o.rss), max(on.rss, n.rss)
			off.hwm, on.hwm = max(off.hwm, o.hwm), max(on.hwm, n.hwm)
		}
		b.ReportMetric(off.cpu.Seconds()/pairs, "hub-cpu-s-off")
		b.ReportMetric(on.cpu.Seconds()/pairs, "hub-cpu-s-on")
		b.ReportMetric(on.cpu.Seconds()/off.cpu.Seconds(), "cpu-ratio")
		b.ReportMetric(lo, "cpu-ratio-min-pair")
		b.ReportMetric(hi, "cpu-ratio-max-pair")
		b.ReportMetric(float64(off.rss)/(1<<20), "hub-rss-MiB-off")
		b.ReportMetric(float64(on.rss)/(1<<20), "hub-rss-MiB-on")
		b.ReportMetric(float64(on.rss)/float64(off.rss), "rss-ratio")
		b.ReportMetric(float64(off.hwm)/(1<<20), "hub-peak-MiB-off")
		b.ReportMetric(float64(on.hwm)/(1<<20), "hub-peak-MiB-on")
		b.ReportMetric(float64(Total(Series(Fleet100()))), "series-fleet-100-clusters")
	}
}

// measure starts the fleet, runs the load and returns the hub's usage over
// it: from a settled hub (settle after the queues exist) to the end of
// the load. With obs, metrics are scraped and every process traces; with
// count, the hub's series are counted.
func measure(b *testing.B, bins *devfleet.ShoalOptions, cli string, obs, count bool) usage {
	opts := *bins
	var recv *framework.OTLPReceiver
	if obs {
		recv = framework.StartOTLPReceiver(b)
		flags := []string{"--tracing-endpoint=" + recv.Addr, "--tracing-insecure", "--tracing-sampling-ratio=1"}
		opts.HubArgs, opts.AgentArgs = flags, flags
	}
	ctx := b.Context()
	var f *devfleet.Fleet
	var err error
	for range 3 { // ports are picked before they are bound: another fleet on the machine may take one first
		f, err = devfleet.Up(ctx, devfleet.Options{Dir: b.TempDir(), Profiles: devfleet.DefaultProfiles, DieWithParent: true, Shoal: &opts})
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		b.Logf("fleet start, again: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Stop() }()
	run := func(stdin string, args ...string) string {
		b.Helper()
		cmd := exec.CommandContext(ctx, cli, append([]string{"--config", f.Shoal.Config}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("", "queue", "create", "-f", filepath.Join("..", "..", "examples", "queues.yaml"))
	run("", "queue", "create", "bench")
	pid := hubPid(b, f)
	time.Sleep(settle)
	if obs {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for t := time.NewTicker(scrapeEvery); ; {
				select {
				case <-stop:
					t.Stop()
					return
				case <-t.C:
					_, _ = scrape(f.Shoal.HTTP + "/metrics")
				}
			}
		}()
	}
	before := read(b, pid)
	for r := range rounds {
		var names []string
		var docs []string
		for i := range jobsPerRound {
			name := fmt.Sprintf("r%d-j%d", r, i)
			names = append(names, name)
			docs = append(docs, job(name))
		}
		run(strings.Join(docs, "---\n"), "job", "submit", "-f", "-")
		waitPhase(b, run, names, v1alpha1.JobRunning)
		run("", append([]string{"job", "cancel"}, names...)...)
		waitPhase(b, run, names, v1alpha1.JobCancelled)
	}
	after := read(b, pid)
	if count {
		countSeries(b, f)
	}
	if obs {
		// Every attempt's 9 hub spans and 3 per member, within the
		// exporter's batch delay (5 s).
		want := rounds * jobsPerRound * (9 + 3*membersPerJob)
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			return len(recv.Spans()) >= want, nil
		})
		if err != nil {
			b.Errorf("the receiver got %d spans, want at least %d: every attempt's", len(recv.Spans()), want)
		}
	}
	return usage{cpu: after.cpu - before.cpu, rss: after.rss, hwm: after.hwm}
}

func job(name string) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: bench
  gang:
    members: %d
    gpusPerMember: 1
  template:
    spec:
      containers:
      - name: main
        image: busybox
`, name, membersPerJob)
}

// waitPhase waits until every named job is in phase.
func waitPhase(b *testing.B, run func(string, ...string) string, names []string, phase v1alpha1.JobPhase) {
	b.Helper()
	var list struct{ Items []v1alpha1.Job }
	err := wait.PollUntilContextTimeout(b.Context(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		if err := json.Unmarshal([]byte(run("", "job", "list", "--queue", "bench", "-o", "json")), &list); err != nil {
			return false, err
		}
		in := map[string]bool{}
		for _, j := range list.Items {
			in[j.Name] = j.Status.Phase == phase
		}
		for _, n := range names {
			if !in[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatalf("jobs %v not all %s: %v", names, phase, err)
	}
}

func hubPid(b *testing.B, f *devfleet.Fleet) int {
	for _, p := range f.Processes() {
		if p.Name == devfleet.HubProcess {
			return p.Pid
		}
	}
	b.Fatal("no shoal-hub process in the fleet")
	return 0
}

// read reads a process's CPU time (/proc/PID/stat utime + stime, in clock
// ticks) and memory (/proc/PID/status VmRSS, VmHWM).
func read(b *testing.B, pid int) usage {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14, stime 15.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseInt(rest[11], 10, 64)
	stime, _ := strconv.ParseInt(rest[12], 10, 64)
	u := usage{cpu: time.Duration(utime+stime) * time.Second / time.Duration(clockTicks(b))}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case err != nil:
		case k == "VmRSS":
			u.rss = kb << 10
		case k == "VmHWM":
			u.hwm = kb << 10
		}
	}
	return u
}

func clockTicks(b *testing.B) int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("getconf CLK_TCK: %q", out)
	}
	return n
}

// scrape returns the number of series (sample lines) of each metric
// family of a /metrics endpoint: a histogram's buckets, +Inf, _sum and
// _count count under its family.
func scrape(url string) (map[string]int, error) {
	resp, err := http.Get(url) //nolint:noctx // a loopback scrape
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return countLines(string(body)), nil
}

// countLines counts the samples of a text exposition by family (the name
// in the last # TYPE line before them).
func countLines(text string) map[string]int {
	out := map[string]int{}
	family := ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			family = strings.Fields(line)[2]
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			name := line[:strings.IndexAny(line, "{ ")]
			if family == "" || !strings.HasPrefix(name, family) {
				family = name
			}
			out[family]++
		}
	}
	return out
}
