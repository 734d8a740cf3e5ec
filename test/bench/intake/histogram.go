// SPDX-License-Identifier: Apache-2.0

package intake

import (
	"context"
	"fmt"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// rpcHistogram is the family whose method series Run reads.
const rpcHistogram = "shoal_hub_grpc_request_duration_seconds"

// histogram is one series of a Prometheus histogram: cumulative counts by
// upper bound, in increasing order.
type histogram struct {
	bounds []float64
	counts []float64
}

// minus is h less an earlier scrape of the same series.
func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

// quantile interpolates linearly inside the bucket holding quantile q, as
// PromQL's histogram_quantile does; 0 when the histogram is empty.
func (h histogram) quantile(q float64) float64 {
	if len(h.counts) == 0 || h.counts[len(h.counts)-1] == 0 {
		return 0
	}
	rank := q * h.counts[len(h.counts)-1]
	lo, below := 0.0, 0.0
	for i, c := range h.counts {
		if c >= rank {
			if math.IsInf(h.bounds[i], 1) {
				return lo // beyond the last bound: the last bound
			}
			return lo + (h.bounds[i]-lo)*(rank-below)/(c-below)
		}
		lo, below = h.bounds[i], c
	}
	return lo
}

// scrapeHistogram reads the method's series of rpcHistogram from url; a
// hub that has not served the method yet has an empty one.
func scrapeHistogram(ctx context.Context, url, method string) (histogram, error) {
	fams, err := scrape(ctx, url)
	if err != nil || fams == nil {
		return histogram{}, err
	}
	return pick(fams[rpcHistogram], method), nil
}

// batchCounter is the family of the hub's batch transactions by outcome,
// storeCounter that of its store requests (operation, result).
const (
	batchCounter = "shoal_job_batch_transactions_total"
	storeCounter = "shoal_store_requests_total"
)

// counts are the counters Run reports: batch transactions by outcome, and
// the store's transactions that failed a guard (conflict: a submission's
// queue or name changed between its read and its write).
type counts struct {
	outcomes  map[string]float64
	conflicts float64
}

// scrapeCounts reads the counts from url.
func scrapeCounts(ctx context.Context, url string) (counts, error) {
	fams, err := scrape(ctx, url)
	if err != nil || fams == nil {
		return counts{}, err
	}
	c := counts{outcomes: map[string]float64{}}
	for _, m := range fams[batchCounter].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "outcome" {
				c.outcomes[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range fams[storeCounter].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["operation"] == "txn" && labels["result"] == "conflict" {
			c.conflicts += m.GetCounter().GetValue()
		}
	}
	return c, nil
}

// scrape reads the metric families url serves; nil when url is empty.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	if url == "" {
		return nil, nil
	}
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
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// pick returns the series of fam whose method label is method.
func pick(fam *dto.MetricFamily, method string) histogram {
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "method" || l.GetValue() != method {
				continue
			}
			var h histogram
			for _, b := range m.GetHistogram().GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.counts = append(h.counts, float64(b.GetCumulativeCount()))
			}
			h.bounds = append(h.bounds, math.Inf(1))
			h.counts = append(h.counts, float64(m.GetHistogram().GetSampleCount()))
			return h
		}
	}
	return histogram{}
}
