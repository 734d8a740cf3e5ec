// SPDX-License-Identifier: Apache-2.0

package app

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/federation/endpoint"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// Config is everything a hub replica needs. DefaultConfig gives the
// values shoal-hub's flags default to; Complete checks a Config and fills
// in the fields that default from others.
type Config struct {
	// DataDir holds the hub CA (pki/) and the embedded etcd (etcd/).
	DataDir string
	// Listen is the gRPC (TLS) listen address, host:port.
	Listen string
	// HTTPListen is the address of /healthz, /readyz and /metrics; "" disables it.
	// It is plain HTTP only on a loopback address; any other address
	// needs HTTPTLS (TLS requiring client certificates).
	HTTPListen string
	// HTTPTLS is HTTPListen's serving certificate, key and client CA.
	HTTPTLS endpoint.TLSFiles
	// HealthListen serves /healthz and /readyz only (no metrics, no error
	// detail) in plain HTTP on any address, for the kubelet's probes; ""
	// disables it.
	HealthListen string
	// RegisterLimit and RegisterBurst rate-limit Register per source IP
	// (server.Config; 0: the server's defaults, negative limit: off).
	RegisterLimit rate.Limit
	RegisterBurst int
	// AdvertiseAddress is the host:port agents and the CLI dial; it is put
	// on the serving certificate. Default: Listen, or this host's name
	// with Listen's port when Listen is on all addresses; a host without a
	// port gets Listen's port.
	AdvertiseAddress string
	// Hostnames are extra DNS names and IPs for the serving certificate.
	Hostnames []string
	// Etcd selects an external etcd; without Endpoints the hub embeds one.
	Etcd Etcd
	// Kubeconfig is the hub management cluster's kubeconfig (optional).
	Kubeconfig string
	// HubCluster is the hub management cluster's client config; it
	// replaces Kubeconfig (for callers that hold a config, not a file).
	// With a hub cluster agents get scoped credentials there, pod
	// templates are checked by a server-side dry-run and the dispatcher runs.
	HubCluster *rest.Config
	// ClusterGrace is how long a cluster may miss heartbeats before it
	// turns NotReady; FenceTimeout how long it then stays NotReady before
	// it turns Lost. Want 0 < ClusterGrace < FenceTimeout.
	ClusterGrace, FenceTimeout time.Duration
	// AgentCertValidity is the lifetime of agent client certificates
	// (0: the registry's default, a year).
	AgentCertValidity time.Duration
	// AdminConfig is the shoal CLI config file that gets this hub's admin
	// identity as context AdminContext; "" skips it.
	AdminConfig, AdminContext string
	// AuditLog is where every mutating API call is written as a JSON line
	// (hub/audit): a file path, "-" for stderr, "" for no audit log.
	AuditLog string
	// Identity names this replica in the elections; default host-pid.
	Identity string
	// Disable lists the leader-elected loops this replica does not run.
	Disable []Controller

	// Scheduler, SchedulerOptions, Dispatch and Rollout tune the
	// leader-elected loops; an empty Identity in them becomes Identity.
	Scheduler        scheduler.Config
	SchedulerOptions []scheduler.Option
	Dispatch         dispatch.Config
	Rollout          rollout.Config
	// ElectionTTL is how long a crashed leader keeps its elections
	// (store.Config.ElectionTTL; 0: the store's default).
	ElectionTTL time.Duration
	// Embedded tunes the embedded etcd.
	Embedded store.EmbeddedConfig
}

// Etcd is an external etcd cluster.
type Etcd struct {
	// Endpoints are its client URLs; none: embedded etcd in DataDir.
	Endpoints []string
	// CAFile is the CA bundle that signed its serving certificates;
	// CertFile and KeyFile are the hub's client certificate and key.
	CAFile, CertFile, KeyFile string
	// Prefix is the key prefix (default store.DefaultPrefix).
	Prefix string
	// InsecureAllowPlaintext accepts http:// endpoints (no TLS: etcd
	// traffic, every job and credential record, in the clear); without it
	// they are refused.
	InsecureAllowPlaintext bool
}

// Controller names a leader-elected loop of the hub.
type Controller string

const (
	// Scheduler places gangs (hub/scheduler).
	Scheduler Controller = "scheduler"
	// Dispatcher creates the placed gangs' member pods on the hub cluster
	// (hub/dispatch); it runs only with a hub cluster.
	Dispatcher Controller = "dispatcher"
	// Rollouts ticks GitOps rollouts (hub/rollout).
	Rollouts Controller = "rollout"
)

// DefaultConfig returns shoal-hub's defaults: state under ~/.shoal, the
// gRPC API on 127.0.0.1:7443, health and metrics on 127.0.0.1:7080, the
// registry's grace and fence timeout, and the admin identity written into
// ~/.shoal/config as context "default".
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return Config{
		DataDir:      filepath.Join(home, ".shoal", "hub"),
		Listen:       "127.0.0.1:7443",
		HTTPListen:   "127.0.0.1:7080",
		ClusterGrace: registry.DefaultGrace,
		FenceTimeout: registry.DefaultFenceTimeout,
		AdminConfig:  filepath.Join(home, ".shoal", "config"),
		AdminContext: "default",
	}
}

func (c *Config) runs(ctl Controller) bool {
	for _, d := range c.Disable {
		if d == ctl {
			return false
		}
	}
	return true
}
