// SPDX-License-Identifier: Apache-2.0

package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProfilingOnlyWhenAsked: /debug/pprof/ is served on the metrics
// endpoint with Profiling and not without.
func TestProfilingOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := &Server{cfg: Config{Profiling: on, Gatherer: prometheus.NewRegistry()}}
		rec := httptest.NewRecorder()
		s.httpHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/cmdline", nil))
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if rec.Code != want {
			t.Errorf("Profiling %v: /debug/pprof/cmdline = %d, want %d", on, rec.Code, want)
		}
		rec = httptest.NewRecorder()
		s.healthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/cmdline", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("Profiling %v: the health endpoint serves /debug/pprof/cmdline (%d)", on, rec.Code)
		}
	}
}
