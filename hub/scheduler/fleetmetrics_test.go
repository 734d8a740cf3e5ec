// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestFleetMetricsSplitEveryGPU: after a cycle, every GPU of the fleet is in
// exactly one state, the queue gauges count the placed and the waiting job,
// and the admission wait of the placed job is recorded.
func TestFleetMetricsSplitEveryGPU(t *testing.T) {
	e := newEnv(t)
	cordoned := node("c", "r", 0)
	cordoned.GPUs, cordoned.Unschedulable = 6, true // 2 of its 8 GPUs unhealthy
	notReady := node("d", "r", 0)
	notReady.Ready = false
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 3), cordoned, notReady)
	e.Cluster("us1", node("e", "r", 2))
	setState(t, e, "us1", v1alpha1.ClusterCordoned)
	e.Submit("one", 1, 8)
	e.Submit("big", 4, 8)
	reg := prometheus.NewRegistry()
	if err := scheduler.Register(reg); err != nil {
		t.Fatal(err)
	}
	before := gather(t, reg) // the histograms are the process's: compare what this cycle added
	res, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil)
	if err != nil || len(res.Placed) != 1 {
		t.Fatalf("cycle placed %v (err %v), want [one]", res.Placed, err)
	}
	got := gather(t, reg)
	for _, k := range []string{`shoal_admission_wait_time_seconds_count{queue=research}`, `shoal_admission_wait_time_seconds_sum{queue=research}`} {
		got[k] -= before[k]
	}
	want := map[string]float64{
		`shoal_fleet_gpus{cluster=eu1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=free}`:      5,
		`shoal_fleet_gpus{cluster=eu1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=allocated}`: 3,
		`shoal_fleet_gpus{cluster=eu1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=reserved}`:  8,
		`shoal_fleet_gpus{cluster=eu1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=unhealthy}`: 10,
		`shoal_fleet_gpus{cluster=eu1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=cordoned}`:  6,
		`shoal_fleet_gpus{cluster=us1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=allocated}`: 2,
		`shoal_fleet_gpus{cluster=us1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=cordoned}`:  6,
		`shoal_fleet_gpus{cluster=us1,pool=h100-80gb,product=NVIDIA-H100-80GB-HBM3,state=free}`:      0,
		`shoal_cluster_status{cluster=eu1,state=Ready}`:                                              1,
		`shoal_cluster_status{cluster=us1,state=Ready}`:                                              0,
		`shoal_cluster_status{cluster=us1,state=Cordoned}`:                                           1,
		`shoal_cluster_inventory_age_seconds{cluster=eu1}`:                                           2,
		`shoal_cluster_inventory_age_seconds{cluster=us1}`:                                           2,
		`shoal_pending_workloads{queue=research}`:                                                    1,
		`shoal_pending_gpus{queue=research}`:                                                         32,
		`shoal_admitted_active_workloads{queue=research}`:                                            1,
		`shoal_queue_resource_usage{gpu_class=all,queue=research}`:                                   8,
		`shoal_jobs{phase=Pending}`:                                                                  1,
		`shoal_jobs{phase=Placed}`:                                                                   1,
		`shoal_jobs{phase=Running}`:                                                                  0,
		`shoal_admission_wait_time_seconds_count{queue=research}`:                                    1,
		`shoal_admission_wait_time_seconds_sum{queue=research}`:                                      2,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if t.Failed() {
		t.Logf("gathered:\n%s", dump(got))
	}
}

func setState(t *testing.T, e *env, cluster string, st v1alpha1.ClusterState) {
	t.Helper()
	cs := store.NewCollection(e.Store, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	c, rev, err := cs.Get(e.Ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	c.Status.State = st
	if _, err := cs.Update(e.Ctx, cluster, c, rev); err != nil {
		t.Fatal(err)
	}
}

// gather flattens reg's samples to name{label=value,...} → value, with
// histograms as their _count and _sum.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := func(suffix string) string { return mf.GetName() + suffix + "{" + strings.Join(ls, ",") + "}" }
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key("_count")] = float64(m.GetHistogram().GetSampleCount())
				out[key("_sum")] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_COUNTER:
				out[key("")] = m.GetCounter().GetValue()
			default:
				out[key("")] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func dump(m map[string]float64) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, k+" "+strconv.FormatFloat(v, 'g', -1, 64))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
