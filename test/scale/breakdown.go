// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"os"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// breakdownHistograms are the hub histograms (docs/metrics.md) that say
// where a run's time went, each with the label values to sum over.
var breakdownHistograms = []struct {
	name, family string
	match        map[string]string
}{
	{"submit (server)", "shoal_job_submit_duration_seconds", nil},
	{"grpc Jobs/Submit", "shoal_hub_grpc_request_duration_seconds", map[string]string{"method": "Jobs/Submit"}},
	{"grpc Jobs/List", "shoal_hub_grpc_request_duration_seconds", map[string]string{"method": "Jobs/List"}},
	{"grpc Clusters/ReportInventory", "shoal_hub_grpc_request_duration_seconds", map[string]string{"method": "Clusters/ReportInventory"}},
	{"grpc Clusters/Heartbeat", "shoal_hub_grpc_request_duration_seconds", map[string]string{"method": "Clusters/Heartbeat"}},
	{"admission wait", "shoal_admission_wait_time_seconds", nil},
	{"placed → prepared", "shoal_dispatch_placed_to_prepared_seconds", nil},
	{"prepared → running", "shoal_dispatch_prepared_to_running_seconds", nil},
	{"store get", "shoal_store_request_duration_seconds", map[string]string{"operation": "get"}},
	{"store list", "shoal_store_request_duration_seconds", map[string]string{"operation": "list"}},
	{"store create", "shoal_store_request_duration_seconds", map[string]string{"operation": "create"}},
	{"store update", "shoal_store_request_duration_seconds", map[string]string{"operation": "update"}},
	{"store txn", "shoal_store_request_duration_seconds", map[string]string{"operation": "txn"}},
}

// breakdown is the histograms of breakdownHistograms over the load, and
// the dispatch decisions by reason.
func breakdown(before, after map[string]*dto.MetricFamily) (map[string]Histogram, map[string]float64) {
	hs := map[string]Histogram{}
	for _, b := range breakdownHistograms {
		if h := histogramDelta(before, after, b.family, b.match); h.Count > 0 {
			hs[b.name] = h
		}
	}
	counters := map[string]float64{}
	for _, fam := range []string{"shoal_dispatch_decisions_total", "shoal_dispatch_reconciles_total", "shoal_dispatch_passes_total",
		"shoal_scheduler_cycles_total", "shoal_scheduler_placed_total", "shoal_scheduler_cycle_phase_seconds_total",
		"shoal_scheduler_explanations_total", "shoal_job_lists_past_compaction_total", "shoal_scheduler_cache_events_total"} {
		for k, v := range counterDelta(before, after, fam) {
			counters[k] = v
		}
	}
	return hs, counters
}

// counterDelta is each series of a counter family in after less before,
// keyed family{labels}.
func counterDelta(before, after map[string]*dto.MetricFamily, family string) map[string]float64 {
	read := func(fams map[string]*dto.MetricFamily) map[string]float64 {
		out := map[string]float64{}
		for _, m := range fams[family].GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[family+"{"+strings.Join(ls, ",")+"}"] = m.GetCounter().GetValue()
		}
		return out
	}
	b, a := read(before), read(after)
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// cpuTimes is the CPU time (user + system) of the hub's processes and of
// the harness itself, by name.
func cpuTimes(f *devfleet.Fleet) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range f.Processes() {
		if d, err := devfleet.CPUTime(p.Pid); err == nil {
			out[p.Name] += d
		}
	}
	if d, err := devfleet.CPUTime(os.Getpid()); err == nil {
		out["harness (agents, in-memory clusters)"] = d
	}
	return out
}
