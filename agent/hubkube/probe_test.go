// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestProbeCountsAnsweredRequestsWithinTheWindow: a heartbeat may say the
// hub cluster is reachable only within the contact window after the start
// of an answered probe; a refusal (403) is an answer, a dead server is not.
func TestProbeCountsAnsweredRequestsWithinTheWindow(t *testing.T) {
	var code atomic.Int32
	code.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			t.Errorf("probe asked %s, want /readyz", r.URL.Path)
		}
		w.WriteHeader(int(code.Load()))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := NewProbe(cs.Discovery().RESTClient(), clk)
	if p.Reachable(clk.Now()) {
		t.Fatal("reachable before any probe")
	}
	p.Once(t.Context())
	at := clk.Now()
	if !p.Reachable(at) || !p.Reachable(at.Add(v1alpha1.HubClusterContactWindow)) {
		t.Fatal("not reachable within the window after an answered probe")
	}
	if p.Reachable(at.Add(v1alpha1.HubClusterContactWindow + time.Millisecond)) {
		t.Fatal("reachable past the window")
	}
	clk.Step(time.Second)
	code.Store(http.StatusForbidden)
	p.Once(t.Context())
	if !p.Reachable(clk.Now().Add(v1alpha1.HubClusterContactWindow)) {
		t.Fatal("a refused probe was not counted as an answer")
	}
	clk.Step(time.Second)
	srv.Close()
	p.Once(t.Context())
	if p.Reachable(clk.Now().Add(v1alpha1.HubClusterContactWindow)) {
		t.Fatal("an unanswered probe was counted")
	}
	if !p.Reachable(clk.Now()) {
		t.Fatal("the earlier answer no longer counts within its window")
	}
}

// TestProbeTellsWhenItsAnswerChanges: OnChange hears of the first answered
// probe, of probes no longer answered and of answers coming back — not of
// every probe.
func TestProbeTellsWhenItsAnswerChanges(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			hj, _ := w.(http.Hijacker)
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close() // no HTTP answer
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProbe(cs.Discovery().RESTClient(), clocktesting.NewFakeClock(time.Unix(1000, 0)))
	var changes atomic.Int32
	p.OnChange(func() { changes.Add(1) })
	for i, step := range []struct {
		up   bool
		want int32
	}{{true, 1}, {true, 1}, {false, 2}, {false, 2}, {true, 3}, {true, 3}} {
		up.Store(step.up)
		p.Once(t.Context())
		if got := changes.Load(); got != step.want {
			t.Fatalf("probe %d (answered %v): %d changes told, want %d", i, step.up, got, step.want)
		}
	}
}
