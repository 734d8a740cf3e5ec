// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// CycleFamily is the hub's scheduling cycle histogram (docs/metrics.md).
const CycleFamily = "shoal_scheduler_cycle_duration_seconds"

// CycleCPUFamily is the CPU time of the hub's scheduling cycles.
const CycleCPUFamily = "shoal_scheduler_cycle_cpu_seconds"

// scrape reads the hub's /metrics.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// Histogram is what a histogram counted between two scrapes.
type Histogram struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"meanSeconds"`
	// P50 and P99 are the upper bounds of the buckets holding the 50th
	// and 99th percentile: the histogram's resolution (about ×√2 buckets for the
	// cycle) is all there is. Past the last bucket they are its bound and
	// P50Above or P99Above says the percentile lies above it (JSON has no
	// infinity).
	P50      float64 `json:"p50SecondsAtMost"`
	P99      float64 `json:"p99SecondsAtMost"`
	P50Above bool    `json:"p50AboveLastBucket,omitempty"`
	P99Above bool    `json:"p99AboveLastBucket,omitempty"`
	// Buckets is how many of the samples fell in each bucket (not
	// cumulative), the buckets with none left out: the shape of the tail
	// that P99 gives only one bound of.
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket is the samples of one histogram bucket: those above the bucket
// below and at most AtMost (+Inf is written as AboveLast).
type Bucket struct {
	AtMost    float64 `json:"atMostSeconds,omitempty"`
	AboveLast bool    `json:"aboveLastBucket,omitempty"`
	Count     uint64  `json:"count"`
}

// histogramDelta is the histogram of family (the series whose labels
// include match) in after less before.
func histogramDelta(before, after map[string]*dto.MetricFamily, family string, match map[string]string) Histogram {
	sum := func(fams map[string]*dto.MetricFamily) (count uint64, total float64, buckets map[float64]uint64) {
		buckets = map[float64]uint64{}
		f := fams[family]
		if f == nil {
			return 0, 0, buckets
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue next
				}
			}
			h := m.GetHistogram()
			count += h.GetSampleCount()
			total += h.GetSampleSum()
			for _, b := range h.GetBucket() {
				buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
		return count, total, buckets
	}
	c0, s0, b0 := sum(before)
	c1, s1, b1 := sum(after)
	h := Histogram{Count: c1 - c0}
	if h.Count == 0 {
		return h
	}
	h.Mean = (s1 - s0) / float64(h.Count)
	bounds := make([]float64, 0, len(b1))
	for ub := range b1 {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	at := func(q float64) (float64, bool) {
		want := uint64(math.Ceil(q * float64(h.Count)))
		last := 0.0
		for _, ub := range bounds {
			if math.IsInf(ub, 1) {
				break
			}
			if b1[ub]-b0[ub] >= want {
				return ub, false
			}
			last = ub
		}
		return last, true
	}
	h.P50, h.P50Above = at(0.5)
	h.P99, h.P99Above = at(0.99)
	var below uint64
	for _, ub := range bounds {
		n := b1[ub] - b0[ub]
		if math.IsInf(ub, 1) {
			n = h.Count // the +Inf bucket, when the exposition lists it
		}
		if n > below {
			b := Bucket{AtMost: ub, Count: n - below}
			if math.IsInf(ub, 1) {
				b = Bucket{AboveLast: true, Count: n - below}
			}
			h.Buckets = append(h.Buckets, b)
		}
		below = n
	}
	if below < h.Count {
		h.Buckets = append(h.Buckets, Bucket{AboveLast: true, Count: h.Count - below})
	}
	return h
}

// rss is a process's resident memory now and at its peak (VmRSS, VmHWM).
func rss(pid int) (now, peak int64, err error) {
	m, err := procStatus(pid)
	return m["VmRSS"], m["VmHWM"], err
}

// procStatus reads the memory figures of /proc/<pid>/status, in bytes,
// by name (VmRSS, VmHWM, RssAnon, RssFile, ...).
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		if !strings.HasSuffix(v, " kB") {
			continue
		}
		if kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64); err == nil {
			out[k] = kb << 10
		}
	}
	return out, nil
}

// probeInventory cordons (or uncordons) node of w and times how long until
// the hub's stored inventory of the cluster, which the scheduler reads,
// shows it.
func probeInventory(ctx context.Context, h *Hub, w *Workload, node string, cordon bool, limit time.Duration) (time.Duration, error) {
	n, err := w.Fake.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	n = n.DeepCopy()
	n.Spec.Unschedulable = cordon
	start := time.Now()
	if _, err := w.Fake.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	for time.Since(start) < limit {
		obj, err := h.Clusters.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: w.Name})
		if err != nil {
			return 0, err
		}
		var inv fedinv.Cluster
		if err := json.Unmarshal(obj.GetJson(), &inv); err != nil {
			return 0, err
		}
		for i := range inv.Nodes {
			if inv.Nodes[i].Name == node && inv.Nodes[i].Unschedulable == cordon {
				return time.Since(start), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("node %s of %s: cordoned=%v not on the hub after %s", node, w.Name, cordon, limit)
}

// timeList times one whole job list (every page) with the filters given,
// returning the time and the number of jobs listed.
func timeList(ctx context.Context, jobs shoalv1.JobsClient, req *shoalv1.ListJobsRequest) (time.Duration, int, error) {
	start := time.Now()
	n := 0
	req.Options = &shoalv1.ListOptions{Limit: 500}
	for {
		resp, err := jobs.List(ctx, req)
		if err != nil {
			return 0, n, err
		}
		n += len(resp.GetItems())
		if resp.GetMeta().GetContinue() == "" {
			return time.Since(start), n, nil
		}
		req.Options.Continue = resp.Meta.Continue
	}
}

// Percentiles of a sample, in seconds.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Seconds"`
	P99 float64 `json:"p99Seconds"`
	Max float64 `json:"maxSeconds"`
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))].Seconds()
	}
	return Percentiles{N: len(s), P50: at(0.5), P99: at(0.99), Max: s[len(s)-1].Seconds()}
}

// overbookedNodes lists every job the hub holds booked (placed or
// running) and sums the GPUs its members are booked on per node, against
// each node's GPUs (its cluster's profile): the nodes booked beyond them,
// "cluster/node booked N of M GPUs", sorted, and how many there are. The
// hub's rule is that no GPU is booked twice; the agents' fit check at
// prepare would refuse such a gang, but a run that ends before the
// dispatcher reaches it shows nothing else of it.
func overbookedNodes(ctx context.Context, jobs shoalv1.JobsClient, gpusPerNode map[string]int) ([]string, error) {
	booked := map[string]int{}
	req := &shoalv1.ListJobsRequest{Options: &shoalv1.ListOptions{Limit: 500}}
	for {
		resp, err := jobs.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, it := range resp.GetItems() {
			var j v1alpha1.Job
			if err := json.Unmarshal(it.GetJson(), &j); err != nil {
				return nil, err
			}
			if p := j.Status.Phase; p != v1alpha1.JobPlaced && p != v1alpha1.JobRunning {
				continue
			}
			for _, m := range j.Status.Members {
				if m.Node != "" {
					booked[m.Cluster+"/"+m.Node] += int(j.Spec.Gang.GPUsPerMember)
				}
			}
		}
		if resp.GetMeta().GetContinue() == "" {
			break
		}
		req.Options.Continue = resp.Meta.Continue
	}
	var out []string
	for node, n := range booked {
		cluster, _, _ := strings.Cut(node, "/")
		if have, ok := gpusPerNode[cluster]; ok && n > have {
			out = append(out, fmt.Sprintf("%s booked %d of %d GPUs", node, n, have))
		}
	}
	slices.Sort(out)
	return out, nil
}
