// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/shoal-dev/shoal/hub/dispatch"
)

// TestTwoPhaseLatenciesAndLogKeys: a gang placed, committed 2 s later and
// running 3 s after that adds one 2 s placed→prepared and one 3 s
// prepared→running observation; a restarted gang's teardown logs with the job and
// its epoch as keys.
func TestTwoPhaseLatenciesAndLogKeys(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := dispatch.Register(reg); err != nil {
		t.Fatal(err)
	}
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	before := histograms(t, reg)
	r.cycle()
	r.pass()
	r.Clock.Step(2 * time.Second)
	r.agent("llama", -1, "")
	r.pass() // committed
	r.Clock.Step(3 * time.Second)
	r.agent("llama", -1, corev1.PodRunning)
	r.pass() // running
	after := histograms(t, reg)
	for name, want := range map[string]float64{
		"shoal_dispatch_placed_to_prepared_seconds":  2,
		"shoal_dispatch_prepared_to_running_seconds": 3,
	} {
		n, sum := after[name][0]-before[name][0], after[name][1]-before[name][1]
		if n != 1 || sum != want {
			t.Errorf("%s: %v observations summing to %v s, want 1 of %v s", name, n, sum, want)
		}
	}

	var buf bytes.Buffer
	ctx := klog.NewContext(r.Ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.Verbosity(2))))
	r.Submit("small", 1, 8)
	r.Clock.Step(time.Minute) // past the gang's placement; "small" waits for GPUs
	r.agent("llama", 0, corev1.PodFailed)
	r.synced(r.disp)
	if err := r.disp.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, `job="llama"`) {
			found = true
			if !strings.Contains(l, "epoch=1") {
				t.Errorf("log line about llama without its epoch: %s", l)
			}
		}
	}
	if !found {
		t.Fatalf("no log line names the job; log:\n%s", buf.String())
	}
}

// histograms maps each histogram of reg to its sample count and sum.
func histograms(t *testing.T, reg *prometheus.Registry) map[string][2]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, mf := range mfs {
		if mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.GetMetric()) == 1 {
			h := mf.GetMetric()[0].GetHistogram()
			out[mf.GetName()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
		}
	}
	return out
}
