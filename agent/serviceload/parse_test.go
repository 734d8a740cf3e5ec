// SPDX-License-Identifier: Apache-2.0

package serviceload

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const page = `# HELP shoal_requests_in_flight Requests being answered.
# TYPE shoal_requests_in_flight gauge
shoal_requests_in_flight{model="llama@3",route="/v1/chat"} 2.5
shoal_requests_in_flight{model="llama@3",route="/v1/completions"} 1
shoal_requests_in_flight{model="llama@2",route="a \"quoted\", {braced} label"} 0.25 1733133600000
shoal_requests_in_flight{model="warming"} NaN
# a comment that is not HELP or TYPE
# HELP shoal_requests_in_flight_total Not the gauge: another name that starts like it.
# TYPE shoal_requests_in_flight_total counter
shoal_requests_in_flight_total 1000
untyped_queue_depth{shard="0"} 3
untyped_queue_depth{shard="1"} 4
# TYPE served_total counter
served_total{code="200"} 41
served_total{code="500"} 1
# TYPE latency_seconds histogram
latency_seconds_bucket{le="1"} 1
latency_seconds_bucket{le="+Inf"} 2
latency_seconds_sum 1.5
latency_seconds_count 2
# TYPE other_gauge gauge
other_gauge +Inf
`

func TestSum(t *testing.T) {
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"shoal_requests_in_flight", 3.75}, // labels summed, NaN skipped, a timestamp allowed
		{"shoal_requests_in_flight_total", 1000},
		{"untyped_queue_depth", 7},
		{"served_total", 42},
	} {
		got, err := Sum(strings.NewReader(page), tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Sum(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := Sum(strings.NewReader(page), "other_gauge"); !errors.Is(err, errInfinite) {
		t.Errorf("an infinite sample: %v, want errInfinite", err)
	}
	neg := "# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"2\"} -Inf\n"
	if _, err := Sum(strings.NewReader(neg), "g"); !errors.Is(err, errInfinite) {
		t.Errorf("-Inf: %v, want errInfinite", err)
	}
	for _, name := range []string{"latency_seconds", "missing"} {
		if v, err := Sum(strings.NewReader(page), name); err == nil {
			t.Errorf("Sum(%s) = %v, want an error", name, v)
		}
	}
	if v, err := Sum(strings.NewReader("g 1\ng{\n"), "g"); err == nil {
		t.Errorf("a page that does not parse: %v, want an error", v)
	}
	if v, err := Sum(strings.NewReader("# TYPE g gauge\ng NaN\n"), "g"); err != nil || v != 0 {
		t.Errorf("only NaN: %v, %v; want 0", v, err)
	}
}

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		sum  float64
		want int64
	}{{0, 0}, {-3, 0}, {math.NaN(), 0}, {0.001, 1}, {3, 3}, {3.2, 4}, {math.Inf(1), math.MaxInt64}, {1e30, math.MaxInt64}} {
		if got := Value(tc.sum); got != tc.want {
			t.Errorf("Value(%v) = %d, want %d", tc.sum, got, tc.want)
		}
	}
}

func TestParseMetric(t *testing.T) {
	m, err := ParseMetric("8000/metrics#shoal_requests_in_flight")
	if err != nil || m != (Metric{Port: 8000, Path: "/metrics", Gauge: "shoal_requests_in_flight"}) {
		t.Errorf("ParseMetric = %+v, %v", m, err)
	}
	m, err = ParseMetric("9090/a/b?x=1#g")
	if err != nil || m != (Metric{Port: 9090, Path: "/a/b?x=1", Gauge: "g"}) {
		t.Errorf("ParseMetric with a query = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "8000/metrics", "8000#g", "/metrics#g", "0/metrics#g", "70000/metrics#g", "x/metrics#g", "8000/metrics#"} {
		if m, err := ParseMetric(bad); err == nil {
			t.Errorf("ParseMetric(%q) = %+v, want an error", bad, m)
		}
	}
}
