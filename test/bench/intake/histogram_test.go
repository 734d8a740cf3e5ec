// SPDX-License-Identifier: Apache-2.0

package intake

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const exposition = `# TYPE shoal_hub_grpc_request_duration_seconds histogram
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/Submit",le="0.01"} 10
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/Submit",le="0.1"} 90
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/Submit",le="1"} 100
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/Submit",le="+Inf"} 100
shoal_hub_grpc_request_duration_seconds_sum{method="Jobs/Submit"} 5
shoal_hub_grpc_request_duration_seconds_count{method="Jobs/Submit"} 100
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/List",le="0.01"} 1
shoal_hub_grpc_request_duration_seconds_bucket{method="Jobs/List",le="+Inf"} 1
shoal_hub_grpc_request_duration_seconds_sum{method="Jobs/List"} 0.001
shoal_hub_grpc_request_duration_seconds_count{method="Jobs/List"} 1
`

func TestHistogramQuantilesOfAStage(t *testing.T) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	after := pick(fams[rpcHistogram], "Jobs/Submit")
	// Interpolated in the bucket holding the rank, as histogram_quantile.
	if got := after.quantile(0.5); math.Abs(got-0.055) > 1e-9 {
		t.Errorf("p50 %v, want 0.055", got)
	}
	if got := after.quantile(0.99); math.Abs(got-0.91) > 1e-9 {
		t.Errorf("p99 %v, want 0.91", got)
	}
	// A stage is the difference of two scrapes: 10 fast calls before it,
	// so 90 in it and its median the 45th, in the 0.01–0.1 bucket of 80.
	before := histogram{bounds: after.bounds, counts: []float64{10, 10, 10, 10, 10}}
	if got := after.minus(before).quantile(0.5); math.Abs(got-(0.01+0.09*45/80)) > 1e-9 {
		t.Errorf("stage p50 %v", got)
	}
	if got := (histogram{}).quantile(0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
	if h := pick(fams[rpcHistogram], "Jobs/SubmitBatch"); len(h.counts) != 0 {
		t.Errorf("a method the hub has not served: %+v", h)
	}
}

// TestScrapeCounts reads the batch transactions by outcome and the
// store's failed transactions (only operation txn, result conflict) from
// a hub's /metrics, as Run does before and after the load.
func TestScrapeCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`# TYPE shoal_job_batch_transactions_total counter
shoal_job_batch_transactions_total{outcome="committed"} 200
shoal_job_batch_transactions_total{outcome="queue_moved"} 7
# TYPE shoal_store_requests_total counter
shoal_store_requests_total{operation="txn",result="conflict"} 3
shoal_store_requests_total{operation="txn",result="ok"} 500
shoal_store_requests_total{operation="update",result="conflict"} 9
`))
	}))
	defer srv.Close()
	c, err := scrapeCounts(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if c.outcomes["committed"] != 200 || c.outcomes["queue_moved"] != 7 || c.outcomes["split"] != 0 || c.conflicts != 3 {
		t.Errorf("counts %+v, want 200 committed, 7 queue_moved, 3 conflicts", c)
	}
	if c, err := scrapeCounts(t.Context(), ""); err != nil || c.outcomes != nil {
		t.Errorf("no URL: %+v, %v", c, err)
	}
}
