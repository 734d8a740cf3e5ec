// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/agent/serviceload"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// inFlight reads the gauge on /metrics as the agent does.
func inFlight(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	v, err := serviceload.Sum(resp.Body, InFlightGauge)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s, %v", resp.Status, err)
	}
	return v
}

func TestServe(t *testing.T) {
	s := &server{model: "chat@2.0", service: "chat", pod: "chat-r1-0", delay: 200 * time.Millisecond}
	srv := httptest.NewServer(s.handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v, %v", resp, err)
	}
	_ = resp.Body.Close()
	if v := inFlight(t, srv.URL); v != 0 {
		t.Errorf("in flight before any request: %v", v)
	}

	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(srv.URL + "/")
			if err != nil {
				done <- result{err: err}
				return
			}
			defer func() { _ = resp.Body.Close() }()
			var a answer
			err = json.NewDecoder(resp.Body).Decode(&a)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("GET /: %s %s", resp.Status, resp.Header.Get("Content-Type"))
			}
			done <- result{a, err}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for inFlight(t, srv.URL) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two delayed requests never counted in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 2 {
		r := <-done
		if r.err != nil || r.a != (answer{Model: "chat@2.0", Service: "chat", Pod: "chat-r1-0"}) {
			t.Errorf("GET / = %+v, %v", r.a, r.err)
		}
	}
	if v := inFlight(t, srv.URL); v != 0 {
		t.Errorf("in flight after the answers: %v", v)
	}

	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# HELP " + InFlightGauge + " ", "# TYPE " + InFlightGauge + " gauge\n", InFlightGauge + " 0\n"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, page)
		}
	}
	if resp, err := http.Get(srv.URL + "/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %v, %v; want 404", resp, err)
	} else {
		_ = resp.Body.Close()
	}
}

// TestServeFailModel: a model whose name contains --fail-model exits 1
// at start, before it serves.
func TestServeFailModel(t *testing.T) {
	t.Setenv(v1alpha1.EnvModel, "chat@3.0-broken")
	if code := serve([]string{"--port", "1", "--fail-model", "broken"}); code != 1 {
		t.Errorf("serve = %d, want 1", code)
	}
}

func TestServeHold(t *testing.T) {
	s := &server{model: "chat@1"}
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/?hold=150ms")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("hold=150ms: %s after %s", resp.Status, time.Since(start))
	}
	if resp, err = http.Get(srv.URL + "/?hold=forever"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("hold=forever: %v %v, want 400", resp.Status, err)
	}
	_ = resp.Body.Close()
}
