// SPDX-License-Identifier: Apache-2.0

package app

import (
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/federation/endpoint"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
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
	// Profiling serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on HTTPListen.
	Profiling bool
	// RESTListen is the address of the REST/JSON face of the API (TLS
	// with the gRPC serving certificate; the same authentication and
	// authorization as gRPC; docs/rest.md); "" disables it.
	RESTListen string
	// RESTHandlers are further handlers served on RESTListen beside the
	// API (server.Config.RESTHandlers), such as the web fleet view.
	RESTHandlers map[string]http.Handler
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
	// ServiceName is the host name of the Service in front of the
	// replicas (e.g. shoal-hub.shoal-system.svc); it is put on every
	// replica's serving certificate and, without AdvertiseAddress, is the
	// address agents and the CLI dial (with Listen's port).
	ServiceName string
	// Peers are every replica's host or host:port (this one's included);
	// each host is put on the serving certificate, so that a client may
	// dial any replica by its own name.
	Peers []string
	// PKIKeyFile is the file of the key that seals the hub CA and the
	// bootstrap admin identity in the store (pki.LoadKeyFile): with it,
	// the replicas on one etcd share them through the store (the first
	// creates the CA, the others load it); without it the CA stays in
	// DataDir/pki only, for a single replica, and a start is refused when
	// the store already holds a shared CA.
	PKIKeyFile string
	// Etcd selects an external etcd; without Endpoints the hub embeds one.
	Etcd Etcd
	// Kubeconfig is the hub management cluster's kubeconfig (optional).
	Kubeconfig string
	// HubClusterServer is the hub management cluster's API server URL
	// written into the agents' hub-cluster kubeconfigs, when agents reach it
	// by another address than the hub does (in-cluster the hub's is
	// https://kubernetes.default.svc, which no other cluster resolves);
	// default: the server of Kubeconfig.
	HubClusterServer string
	// HubCluster is the hub management cluster's client config; it
	// replaces Kubeconfig (for callers that hold a config, not a file).
	// With a hub cluster agents get scoped credentials there, pod
	// templates are checked by a server-side dry-run and the dispatcher runs.
	HubCluster *rest.Config
	// ClusterGrace is how long a cluster may miss heartbeats before it
	// turns NotReady; FenceTimeout how long it then stays NotReady before
	// it turns Lost. Want 0 < ClusterGrace < FenceTimeout.
	ClusterGrace, FenceTimeout time.Duration
	// FenceMargin is added to FenceTimeout before a silent cluster turns
	// Lost: it covers the agent's fence check interval (up to a second),
	// the stop of its local pods and the registry's sweep. 0 is
	// registry.DefaultFenceMargin; else at least a second.
	FenceMargin time.Duration
	// AgentCertValidity is the lifetime of agent client certificates
	// (0: the registry's default, a year).
	AgentCertValidity time.Duration
	// UserCertValidity is the lifetime of user client certificates and the
	// longest a `shoal user create`/`renew` may ask for (0: a year).
	UserCertValidity time.Duration
	// OIDC is the issuer whose ID tokens authenticate users without a
	// client certificate (bearer tokens); no IssuerURL accepts none.
	OIDC users.OIDCConfig
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
	// Retention says how long finished jobs are kept (the leader deletes
	// them); Defrag schedules the embedded etcd's defragmentation
	// (docs/retention.md).
	Retention jobs.RetentionConfig
	Defrag    store.DefragConfig
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
		FenceMargin:  registry.DefaultFenceMargin,
		AdminConfig:  filepath.Join(home, ".shoal", "config"),
		AdminContext: "default",
		Retention:    jobs.RetentionConfig{TTL: DefaultFinishedJobTTL, MaxCount: DefaultFinishedJobMaxCount},
		Defrag:       store.DefragConfig{Interval: DefaultDefragInterval},
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
