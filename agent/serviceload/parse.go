// SPDX-License-Identifier: Apache-2.0

package serviceload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric is where a pod serves its load: the annotation
// v1alpha1.AnnotationLoadMetric, "<port><path>#<gauge>".
type Metric struct {
	Port  int
	Path  string
	Gauge string
}

// ParseMetric parses the value of the annotation v1alpha1.AnnotationLoadMetric,
// e.g. "8000/metrics#shoal_requests_in_flight".
func ParseMetric(s string) (Metric, error) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return Metric{}, fmt.Errorf("load metric %q: want <port><path>#<gauge>", s)
	}
	where, gauge := s[:i], s[i+1:]
	j := strings.IndexByte(where, '/')
	if j < 0 {
		return Metric{}, fmt.Errorf("load metric %q: no path after the port", s)
	}
	port, err := strconv.Atoi(where[:j])
	if err != nil || port < 1 || port > 65535 {
		return Metric{}, fmt.Errorf("load metric %q: port %q is not 1-65535", s, where[:j])
	}
	if gauge == "" {
		return Metric{}, fmt.Errorf("load metric %q: no gauge name", s)
	}
	return Metric{Port: port, Path: where[j:], Gauge: gauge}, nil
}

// errInfinite fails a page whose gauge has an infinite sample.
var errInfinite = errors.New("infinite sample")

// Sum returns the sum of the samples of the metric name, a gauge (or a
// counter or an untyped metric), in a page of the Prometheus text format.
// NaN samples are skipped; an infinite sample, a histogram or summary of
// that name, a page that does not parse, or one without the metric are
// errors.
func Sum(page io.Reader, name string) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(page)
	if err != nil {
		return 0, err
	}
	f := families[name]
	if f == nil {
		return 0, fmt.Errorf("no metric %q on the page", name)
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		var v float64
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_UNTYPED:
			v = m.GetUntyped().GetValue()
		default:
			return 0, fmt.Errorf("metric %q is a %s, not a gauge", name, strings.ToLower(f.GetType().String()))
		}
		switch {
		case math.IsNaN(v):
			continue
		case math.IsInf(v, 0):
			return 0, fmt.Errorf("metric %q: %w %v", name, errInfinite, v)
		}
		sum += v
	}
	return sum, nil
}

// Value is the load reported for sum: rounded up, never negative.
func Value(sum float64) int64 {
	switch {
	case !(sum > 0): // NaN too
		return 0
	case sum >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(math.Ceil(sum))
}
