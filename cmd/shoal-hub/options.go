package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// options are shoal-hub's flags.
type options struct {
	dataDir          string
	listen           string
	httpListen       string
	advertiseAddress string
	hostnames        []string
	etcdEndpoints    []string
	etcdCA           string
	etcdCert         string
	etcdKey          string
	etcdPrefix       string
	kubeconfig       string
	clusterGrace     time.Duration
	fenceTimeout     time.Duration
	agentCertTTL     time.Duration
	adminConfig      string
	adminContext     string
}

func defaultOptions() *options {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return &options{
		dataDir:      filepath.Join(home, ".shoal", "hub"),
		listen:       "127.0.0.1:7443",
		httpListen:   "127.0.0.1:7080",
		clusterGrace: registry.DefaultGrace,
		fenceTimeout: registry.DefaultFenceTimeout,
		adminConfig:  filepath.Join(home, ".shoal", "config"),
		adminContext: "default",
	}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "directory for the hub CA and the embedded etcd")
	fs.StringVar(&o.listen, "listen", o.listen, "gRPC (TLS) listen address")
	fs.StringVar(&o.httpListen, "http-listen", o.httpListen, "HTTP listen address of /healthz, /readyz and /metrics (\"\" disables it)")
	fs.StringVar(&o.advertiseAddress, "advertise-address", "", "host[:port] agents and the CLI dial; added to the serving certificate (default: the listen address, or this host's name when listening on all addresses)")
	fs.StringSliceVar(&o.hostnames, "hostnames", nil, "extra DNS names and IPs for the serving certificate")
	fs.StringSliceVar(&o.etcdEndpoints, "etcd-endpoints", nil, "client URLs of an external etcd cluster (default: embedded etcd in --data-dir)")
	fs.StringVar(&o.etcdCA, "etcd-ca", "", "CA bundle that signed the external etcd's serving certificates")
	fs.StringVar(&o.etcdCert, "etcd-cert", "", "client certificate for the external etcd")
	fs.StringVar(&o.etcdKey, "etcd-key", "", "client key for the external etcd")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", "", "key prefix in etcd (default /shoal/)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the hub management cluster (optional; agents then get scoped credentials there)")
	fs.DurationVar(&o.clusterGrace, "cluster-grace", o.clusterGrace, "how long a cluster may miss heartbeats before it turns NotReady")
	fs.DurationVar(&o.fenceTimeout, "cluster-fence-timeout", o.fenceTimeout, "how long a silent cluster stays NotReady before it turns Lost")
	fs.DurationVar(&o.agentCertTTL, "agent-cert-validity", 0, "lifetime of agent client certificates (default 1 year)")
	fs.StringVar(&o.adminConfig, "admin-config", o.adminConfig, "shoal CLI config file to write the admin identity into (\"\" skips it)")
	fs.StringVar(&o.adminContext, "admin-context", o.adminContext, "name of the context written into --admin-config")
}

// complete checks the flags and fills in defaults that depend on others.
func (o *options) complete() error {
	if o.dataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	host, port, err := net.SplitHostPort(o.listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port: %w", o.listen, err)
	}
	if o.advertiseAddress == "" {
		o.advertiseAddress = o.listen
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			name, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("--advertise-address is needed when listening on all addresses: %w", err)
			}
			o.advertiseAddress = net.JoinHostPort(name, port)
		}
	} else if _, _, err := net.SplitHostPort(o.advertiseAddress); err != nil {
		o.advertiseAddress = net.JoinHostPort(o.advertiseAddress, port)
	}
	if o.clusterGrace <= 0 || o.fenceTimeout <= o.clusterGrace {
		return fmt.Errorf("want 0 < --cluster-grace (%s) < --cluster-fence-timeout (%s)", o.clusterGrace, o.fenceTimeout)
	}
	if len(o.etcdEndpoints) == 0 && (o.etcdCA != "" || o.etcdCert != "" || o.etcdKey != "") {
		return errors.New("--etcd-ca/--etcd-cert/--etcd-key need --etcd-endpoints")
	}
	if (o.etcdCert == "") != (o.etcdKey == "") {
		return errors.New("--etcd-cert and --etcd-key go together")
	}
	return nil
}

// serverHosts are the names and IPs the serving certificate covers.
func (o *options) serverHosts() []string {
	hosts := append([]string{}, o.hostnames...)
	if h, _, err := net.SplitHostPort(o.advertiseAddress); err == nil {
		hosts = append(hosts, h)
	}
	if h, _, err := net.SplitHostPort(o.listen); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// etcdTLS is the client TLS configuration for an external etcd (nil: plain
// http endpoints; system roots for https endpoints without --etcd-ca).
func (o *options) etcdTLS() (*tls.Config, error) {
	if o.etcdCA == "" && o.etcdCert == "" {
		for _, e := range o.etcdEndpoints {
			if strings.HasPrefix(e, "https://") {
				return &tls.Config{MinVersion: tls.VersionTLS12}, nil
			}
		}
		return nil, nil
	}
	return store.ClientTLS(o.etcdCA, o.etcdCert, o.etcdKey)
}
