// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shoal-dev/shoal/hub/store"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := store.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := store.Register(reg); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	ctx := testCtx(t)
	c := collection(t, "metrics")
	must[int64](t)(c.Create(ctx, "a", testObj{}))
	_, _ = c.Create(ctx, "a", testObj{})
	n, err := testutil.GatherAndCount(reg, "shoal_store_requests_total", "shoal_store_request_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 { // create/ok, create/already_exists, duration{create}
		t.Fatalf("%d series, want at least 3", n)
	}
}
