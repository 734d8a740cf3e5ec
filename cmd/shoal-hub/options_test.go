package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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
		{"all addresses advertise the host name", func(o *options) { o.listen = "0.0.0.0:9443" }, host + ":9443", ""},
		{"advertise host gets the listen port", func(o *options) { o.advertiseAddress = "hub.example.com" }, "hub.example.com:7443", ""},
		{"advertise host:port kept", func(o *options) { o.advertiseAddress = "hub.example.com:443" }, "hub.example.com:443", ""},
		{"bad listen", func(o *options) { o.listen = "7443" }, "", "--listen"},
		{"fence not after grace", func(o *options) { o.fenceTimeout = o.clusterGrace }, "", "--cluster-fence-timeout"},
		{"etcd TLS without endpoints", func(o *options) { o.etcdCA = "ca.pem" }, "", "--etcd-endpoints"},
		{"etcd cert without key", func(o *options) {
			o.etcdEndpoints, o.etcdCert = []string{"https://e1:2379"}, "c.pem"
		}, "", "--etcd-key"},
		{"empty data dir", func(o *options) { o.dataDir = "" }, "", "--data-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOptions()
			o.clusterGrace, o.fenceTimeout = 40*time.Second, 5*time.Minute
			tt.mod(o)
			err := o.complete()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to name %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || o.advertiseAddress != tt.wantAdvertise {
				t.Fatalf("advertise %q, %v; want %q", o.advertiseAddress, err, tt.wantAdvertise)
			}
		})
	}
}

func TestServerHosts(t *testing.T) {
	o := defaultOptions()
	o.listen, o.advertiseAddress, o.hostnames = "0.0.0.0:7443", "10.0.0.5:7443", []string{"hub.example.com"}
	got := o.serverHosts()
	for _, want := range []string{"hub.example.com", "10.0.0.5"} {
		if !slices.Contains(got, want) {
			t.Errorf("serving certificate hosts %v lack %s", got, want)
		}
	}
	if slices.Contains(got, "0.0.0.0") {
		t.Errorf("serving certificate hosts %v contain the unspecified address", got)
	}
}
