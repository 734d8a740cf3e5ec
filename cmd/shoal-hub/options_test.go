// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/federation/endpoint"
	"github.com/shoal-dev/shoal/hub/users"
)

func TestOptionsComplete(t *testing.T) {
	host, _ := os.Hostname()
	tests := []struct {
		name          string
		mod           func(*options)
		wantAdvertise string
		wantErr       string
	}{
		{"defaults", func(*options) {}, "127.0.0.1:7443", ""},
		{"all addresses advertise the host name", func(o *options) { o.cfg.Listen = "0.0.0.0:9443" }, host + ":9443", ""},
		{"advertise host gets the listen port", func(o *options) { o.cfg.AdvertiseAddress = "hub.example.com" }, "hub.example.com:7443", ""},
		{"advertise host:port kept", func(o *options) { o.cfg.AdvertiseAddress = "hub.example.com:443" }, "hub.example.com:443", ""},
		{"bad listen", func(o *options) { o.cfg.Listen = "7443" }, "", "--listen"},
		{"fence not after grace", func(o *options) { o.cfg.FenceTimeout = o.cfg.ClusterGrace }, "", "--cluster-fence-timeout"},
		{"fence margin under a second", func(o *options) { o.cfg.FenceMargin = 500 * time.Millisecond }, "", "--fence-margin"},
		{"etcd TLS without endpoints", func(o *options) { o.cfg.Etcd.CAFile = "ca.pem" }, "", "--etcd-endpoints"},
		{"etcd cert without key", func(o *options) {
			o.cfg.Etcd.Endpoints, o.cfg.Etcd.CertFile = []string{"https://e1:2379"}, "c.pem"
		}, "", "--etcd-key"},
		{"empty data dir", func(o *options) { o.cfg.DataDir = "" }, "", "--data-dir"},
		{"plain http etcd", func(o *options) { o.cfg.Etcd.Endpoints = []string{"http://e1:2379"} }, "", "--etcd-insecure-allow-plaintext"},
		{"plain http etcd allowed knowingly", func(o *options) {
			o.cfg.Etcd.Endpoints, o.cfg.Etcd.InsecureAllowPlaintext = []string{"http://e1:2379"}, true
		}, "127.0.0.1:7443", ""},
		{"metrics exposed without TLS", func(o *options) { o.cfg.HTTPListen = ":7080" }, "", "--http-client-ca"},
		{"metrics exposed with TLS", func(o *options) {
			o.cfg.HTTPListen, o.cfg.HTTPTLS.CertFile, o.cfg.HTTPTLS.KeyFile, o.cfg.HTTPTLS.ClientCAFile = ":7080", "c", "k", "ca"
		}, "127.0.0.1:7443", ""},
		{"health on all addresses", func(o *options) { o.cfg.HealthListen = ":8081" }, "127.0.0.1:7443", ""},
		{"oidc issuer over http", func(o *options) {
			o.cfg.OIDC.IssuerURL, o.cfg.OIDC.ClientID = "http://id.example.com", "shoal"
		}, "", "--oidc-issuer-url"},
		{"oidc issuer without client id", func(o *options) { o.cfg.OIDC.IssuerURL = "https://id.example.com" }, "", "--oidc-client-id"},
		{"oidc client id without issuer", func(o *options) { o.cfg.OIDC.ClientID = "shoal" }, "", "--oidc-issuer-url"},
		{"oidc issuer", func(o *options) {
			o.cfg.OIDC.IssuerURL, o.cfg.OIDC.ClientID = "https://id.example.com", "shoal"
		}, "127.0.0.1:7443", ""},
		{"negative user certificate validity", func(o *options) { o.cfg.UserCertValidity = -time.Hour }, "", "--user-cert-validity"},
		{"service name is the advertise address", func(o *options) { o.cfg.ServiceName = "shoal-hub.shoal-system.svc" },
			"shoal-hub.shoal-system.svc:7443", ""},
		{"advertise address wins over the service name", func(o *options) {
			o.cfg.ServiceName, o.cfg.AdvertiseAddress = "shoal-hub.shoal-system.svc", "hub.example.com:443"
		}, "hub.example.com:443", ""},
		{"shared CA without external etcd", func(o *options) { o.cfg.PKIKeyFile = "key" }, "", "--etcd-endpoints"},
		{"cycle nice out of range", func(o *options) { o.cfg.Scheduler.CycleNice = -21 }, "", "--scheduler-cycle-nice"},
		{"cycle nice", func(o *options) { o.cfg.Scheduler.CycleNice = -10 }, "127.0.0.1:7443", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOptions()
			o.cfg.ClusterGrace, o.cfg.FenceTimeout = 40*time.Second, 5*time.Minute
			tt.mod(o)
			err := o.complete()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to name %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || o.cfg.AdvertiseAddress != tt.wantAdvertise {
				t.Fatalf("advertise %q, %v; want %q", o.cfg.AdvertiseAddress, err, tt.wantAdvertise)
			}
		})
	}
}

func TestServerHosts(t *testing.T) {
	o := defaultOptions()
	o.cfg.Listen, o.cfg.AdvertiseAddress, o.cfg.Hostnames = "0.0.0.0:7443", "10.0.0.5:7443", []string{"hub.example.com"}
	got := o.cfg.ServerHosts()
	for _, want := range []string{"hub.example.com", "10.0.0.5"} {
		if !slices.Contains(got, want) {
			t.Errorf("serving certificate hosts %v lack %s", got, want)
		}
	}
	if slices.Contains(got, "0.0.0.0") {
		t.Errorf("serving certificate hosts %v contain the unspecified address", got)
	}
	o.cfg.ServiceName, o.cfg.Peers = "shoal-hub.shoal-system.svc", []string{"shoal-hub-0.peers:7443", "shoal-hub-1.peers"}
	got = o.cfg.ServerHosts()
	for _, want := range []string{"shoal-hub.shoal-system.svc", "shoal-hub-0.peers", "shoal-hub-1.peers"} {
		if !slices.Contains(got, want) {
			t.Errorf("serving certificate hosts %v lack %s (the Service and every peer)", got, want)
		}
	}
}

// TestFlagsFillConfig: every flag lands in its Config field.
func TestFlagsFillConfig(t *testing.T) {
	o := defaultOptions()
	fs := pflag.NewFlagSet("shoal-hub", pflag.ContinueOnError)
	o.addFlags(fs)
	err := fs.Parse([]string{
		"--data-dir=/d", "--listen=0.0.0.0:1", "--http-listen=", "--advertise-address=hub:2", "--hostnames=a,b",
		"--etcd-endpoints=https://e1,https://e2", "--etcd-ca=ca", "--etcd-cert=c", "--etcd-key=k", "--etcd-prefix=/p/",
		"--kubeconfig=kc", "--cluster-grace=1s", "--cluster-fence-timeout=2s", "--fence-margin=5s", "--agent-cert-validity=3s",
		"--admin-config=ac", "--admin-context=ctx", "--gang-start-timeout=4s",
		"--http-tls-cert=hc", "--http-tls-key=hk", "--http-client-ca=hca", "--health-listen=:8081",
		"--etcd-insecure-allow-plaintext", "--register-rate=0.5", "--register-burst=7",
		"--user-cert-validity=5s", "--oidc-issuer-url=https://id", "--oidc-client-id=cid", "--oidc-username-claim=email",
		"--oidc-username-prefix=up:", "--oidc-groups-claim=groups", "--oidc-groups-prefix=gp:", "--oidc-ca-file=oca",
		"--service-name=svc", "--peers=p0,p1", "--pki-encryption-key-file=pk", "--election-ttl=6s",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	got := []any{c.DataDir, c.Listen, c.HTTPListen, c.AdvertiseAddress, c.Hostnames, c.Etcd.Endpoints, c.Etcd.CAFile,
		c.Etcd.CertFile, c.Etcd.KeyFile, c.Etcd.Prefix, c.Kubeconfig, c.ClusterGrace, c.FenceTimeout,
		c.FenceMargin, c.AgentCertValidity, c.AdminConfig, c.AdminContext, c.Dispatch.StartTimeout,
		c.HTTPTLS, c.HealthListen, c.Etcd.InsecureAllowPlaintext, float64(c.RegisterLimit), c.RegisterBurst,
		c.UserCertValidity, c.OIDC, c.ServiceName, c.Peers, c.PKIKeyFile, c.ElectionTTL}
	want := []any{"/d", "0.0.0.0:1", "", "hub:2", []string{"a", "b"}, []string{"https://e1", "https://e2"}, "ca",
		"c", "k", "/p/", "kc", time.Second, 2 * time.Second, 5 * time.Second, 3 * time.Second, "ac", "ctx", 4 * time.Second,
		endpoint.TLSFiles{CertFile: "hc", KeyFile: "hk", ClientCAFile: "hca"}, ":8081", true, 0.5, 7,
		5 * time.Second, users.OIDCConfig{IssuerURL: "https://id", ClientID: "cid", UsernameClaim: "email",
			UsernamePrefix: "up:", GroupsClaim: "groups", GroupsPrefix: "gp:", CAFile: "oca"},
		"svc", []string{"p0", "p1"}, "pk", 6 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("config from flags\n%v\nwant\n%v", got, want)
	}
}

// TestMemoryLimit: --memory-limit sets the collector's soft limit; a
// value that is not a positive quantity is refused and changes nothing.
func TestMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	for _, bad := range []string{"lots", "0", "-1Gi"} {
		if err := applyMemoryLimit(bad); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
			t.Errorf("--memory-limit %q: %v, want an error naming the flag", bad, err)
		}
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Fatalf("a refused --memory-limit %q changed the limit to %d", bad, got)
		}
	}
	if err := applyMemoryLimit("1400Mi"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 1400<<20 {
		t.Fatalf("limit %d, want %d", got, 1400<<20)
	}
}
