// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// family is a histogram family of one series with cumulative bucket
// counts at bounds (the last +Inf).
func family(name string, bounds []float64, counts []uint64, sum float64) map[string]*dto.MetricFamily {
	h := &dto.Histogram{SampleCount: proto.Uint64(counts[len(counts)-1]), SampleSum: proto.Float64(sum)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(counts[i])})
	}
	return map[string]*dto.MetricFamily{name: {Name: proto.String(name), Metric: []*dto.Metric{{Histogram: h}}}}
}

// TestHistogramPastLastBucket checks that a percentile above the last
// finite bucket is reported as that bound with its Above flag, and that
// the result still encodes as JSON (a run of 100,000 jobs lost its result
// to a +Inf).
func TestHistogramPastLastBucket(t *testing.T) {
	bounds := []float64{0.1, 1, 10, math.Inf(1)}
	before := family("h", bounds, []uint64{0, 0, 0, 0}, 0)
	after := family("h", bounds, []uint64{60, 90, 97, 100}, 500)
	h := histogramDelta(before, after, "h", nil)
	if h.Count != 100 || h.P50 != 0.1 || h.P50Above || h.P99 != 10 || !h.P99Above {
		t.Fatalf("got %+v; want count 100, p50 ≤ 0.1, p99 above 10", h)
	}
	if _, err := json.Marshal(h); err != nil {
		t.Fatal(err)
	}
	want := []Bucket{{AtMost: 0.1, Count: 60}, {AtMost: 1, Count: 30}, {AtMost: 10, Count: 7}, {AboveLast: true, Count: 3}}
	if !slices.Equal(h.Buckets, want) {
		t.Fatalf("buckets %+v, want %+v", h.Buckets, want)
	}
	within := histogramDelta(before, family("h", bounds, []uint64{60, 90, 100, 100}, 50), "h", nil)
	if within.P99 != 10 || within.P99Above {
		t.Fatalf("got %+v; want p99 ≤ 10, not above", within)
	}
	// Counted between two scrapes: the samples before are not the run's,
	// and empty buckets are left out.
	later := histogramDelta(after, family("h", bounds, []uint64{61, 91, 98, 102}, 600), "h", nil)
	want = []Bucket{{AtMost: 0.1, Count: 1}, {AboveLast: true, Count: 1}}
	if !slices.Equal(later.Buckets, want) {
		t.Fatalf("buckets %+v, want %+v", later.Buckets, want)
	}
}
