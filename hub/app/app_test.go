// SPDX-License-Identifier: Apache-2.0

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestRunServesAndStops runs a whole hub on an embedded etcd: it becomes
// Ready, writes the admin identity, leads the scheduler and rollout
// elections as its identity, and stops cleanly with its ctx.
func TestRunServesAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	dir := t.TempDir()
	port, err := store.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, fmt.Sprintf("127.0.0.1:%d", port), ""
	cfg.AdminConfig, cfg.Identity = filepath.Join(dir, "config"), "hub-test"
	cfg.ElectionTTL, cfg.Embedded.UnsafeNoFsync = time.Second, true
	cfg.RESTListen = "127.0.0.1:0"
	h, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Address() != cfg.Listen {
		t.Fatalf("Address %q, want the listen address %q", h.Address(), cfg.Listen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = h.Run(rctx) }()
	select {
	case <-h.Ready():
	case <-h.Done():
		t.Fatalf("Run returned before Ready: %v", h.Err())
	case <-ctx.Done():
		t.Fatal("not Ready within a minute")
	}
	if err := h.Run(ctx); err == nil {
		t.Fatal("a second Run succeeded")
	}
	admin, err := configv1alpha1.Load(cfg.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := admin.Context("default"); err != nil || c.Hub != cfg.Listen || c.CAData != string(h.CA().CertPEM) {
		t.Fatalf("admin context %+v, %v; want hub %s with this CA", c, err, cfg.Listen)
	}
	for _, election := range []string{app.LeaderElection, scheduler.Election, rollout.Election} {
		waitLeader(ctx, t, h.Store(), election, "hub-test")
	}
	checkREST(ctx, t, h, admin)
	stop()
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("Run did not return after its ctx ended")
	}
	if err := h.Err(); err != nil {
		t.Fatalf("Run after a clean stop: %v", err)
	}
}

// TestNewRejectsInvalidConfig: New completes the Config and reports the
// fields at fault as a *ConfigError.
func TestNewRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*app.Config)
		field string
	}{
		{"empty data dir", func(c *app.Config) { c.DataDir = "" }, "DataDir"},
		{"bad listen", func(c *app.Config) { c.Listen = "7443" }, "Listen"},
		{"fence not after grace", func(c *app.Config) { c.FenceTimeout = c.ClusterGrace }, "FenceTimeout"},
		{"etcd TLS without endpoints", func(c *app.Config) { c.Etcd.CAFile = "ca.pem" }, "Etcd.Endpoints"},
		{"etcd cert without key", func(c *app.Config) {
			c.Etcd.Endpoints, c.Etcd.CertFile = []string{"https://e1:2379"}, "c.pem"
		}, "Etcd.KeyFile"},
		{"plain http etcd", func(c *app.Config) {
			c.Etcd.Endpoints = []string{"https://e1:2379", "http://e2:2379"}
		}, "Etcd.InsecureAllowPlaintext"},
		{"metrics on all addresses without TLS", func(c *app.Config) { c.HTTPListen = "0.0.0.0:7080" }, "HTTPTLS.ClientCAFile"},
		{"metrics TLS without client CA", func(c *app.Config) {
			c.HTTPListen, c.HTTPTLS.CertFile, c.HTTPTLS.KeyFile = "0.0.0.0:7080", "c.pem", "k.pem"
		}, "HTTPTLS.ClientCAFile"},
		{"bad health listen", func(c *app.Config) { c.HealthListen = "8081" }, "HealthListen"},
		{"bad REST listen", func(c *app.Config) { c.RESTListen = "7444" }, "RESTListen"},
		{"negative finished-job TTL", func(c *app.Config) { c.Retention.TTL = -time.Second }, "Retention.TTL"},
		{"negative finished-job count", func(c *app.Config) { c.Retention.MaxCount = -1 }, "Retention.MaxCount"},
		{"negative defrag interval", func(c *app.Config) { c.Defrag.Interval = -time.Hour }, "Defrag.Interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := app.DefaultConfig()
			tt.mod(&cfg)
			_, err := app.New(cfg)
			var ce *app.ConfigError
			if !errors.As(err, &ce) || !slices.Contains(ce.Fields, tt.field) {
				t.Fatalf("New: %v, want a ConfigError naming %s", err, tt.field)
			}
		})
	}
}

func waitLeader(ctx context.Context, t *testing.T, st *store.Store, election, want string) {
	t.Helper()
	for {
		id, err := st.Leader(ctx, election)
		if err == nil && id == want {
			return
		}
		if err != nil && !errors.Is(err, store.ErrNoLeader) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s leader %q, want %q", election, id, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkREST: the REST face listens on the address RESTAddress gives and
// knows the admin by its certificate.
func checkREST(ctx context.Context, t *testing.T, h *app.Hub, admin *configv1alpha1.ClientConfig) {
	t.Helper()
	c, err := admin.Context("default")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if h.RESTAddress() == "" {
		t.Fatal("RESTAddress is empty with RESTListen set")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+h.RESTAddress()+"/v1/whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var who struct{ User, Method string }
	if err := json.NewDecoder(resp.Body).Decode(&who); err != nil || resp.StatusCode != http.StatusOK || who.User != "admin" || who.Method != "certificate" {
		t.Fatalf("GET /v1/whoami as the admin: HTTP %d %+v (%v)", resp.StatusCode, who, err)
	}
}
