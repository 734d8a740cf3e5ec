// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// options are shoal-hub's flags, parsed straight into the hub's Config.
type options struct {
	cfg app.Config
	// webUI is --web-ui.
	webUI bool
	// memoryLimit is --memory-limit (memory.go).
	memoryLimit string
}

func defaultOptions() *options {
	return &options{cfg: app.DefaultConfig()}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	c := &o.cfg
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the hub CA and the embedded etcd")
	fs.StringVar(&c.Listen, "listen", c.Listen, "gRPC (TLS) listen address")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen, "HTTP listen address of /healthz, /readyz and /metrics (\"\" disables it); plain HTTP on a loopback address, elsewhere only with --http-tls-cert/--http-tls-key/--http-client-ca")
	fs.BoolVar(&c.Profiling, "profiling", false, "serve Go's runtime profiles (CPU, heap, goroutines) under /debug/pprof/ on --http-listen")
	fs.StringVar(&c.AdvertiseAddress, "advertise-address", "", "host[:port] agents and the CLI dial; added to the serving certificate (default: the listen address, or this host's name when listening on all addresses)")
	fs.StringSliceVar(&c.Hostnames, "hostnames", nil, "extra DNS names and IPs for the serving certificate")
	fs.StringSliceVar(&c.Etcd.Endpoints, "etcd-endpoints", nil, "client URLs of an external etcd cluster (default: embedded etcd in --data-dir)")
	fs.StringVar(&c.Etcd.CAFile, "etcd-ca", "", "CA bundle that signed the external etcd's serving certificates")
	fs.StringVar(&c.Etcd.CertFile, "etcd-cert", "", "client certificate for the external etcd")
	fs.StringVar(&c.Etcd.KeyFile, "etcd-key", "", "client key for the external etcd")
	fs.StringVar(&c.Etcd.Prefix, "etcd-prefix", "", "key prefix in etcd (default /shoal/)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub management cluster (optional; agents then get scoped credentials there)")
	fs.StringVar(&c.HubClusterServer, "hub-cluster-server", "", "URL of the hub management cluster's API server as the agents reach it, written into their hub-cluster kubeconfigs (default: the server of --kubeconfig; in a pod that is https://kubernetes.default.svc, which other clusters cannot reach)")
	fs.DurationVar(&c.ClusterGrace, "cluster-grace", c.ClusterGrace, "how long a cluster may miss heartbeats before it turns NotReady")
	fs.DurationVar(&c.FenceTimeout, "cluster-fence-timeout", c.FenceTimeout, "the agents' fence timeout: a silent agent stops its members after it; sent to every agent, which fences by it when its own --fence-timeout is longer")
	fs.DurationVar(&c.FenceMargin, "fence-margin", c.FenceMargin, "added to --cluster-fence-timeout before a silent cluster turns Lost and its gangs move (at least 1s)")
	fs.DurationVar(&c.Dispatch.FinishedRetention, "finished-member-retention", dispatch.DefaultFinishedRetention,
		"how long a finished job keeps its ended members' pods, and so their logs (kubectl logs on the hub), before they are deleted; 0 deletes them at once")
	fs.IntVar(&c.Dispatch.MaxPreparingMembers, "max-preparing-members", dispatch.DefaultMaxPreparingMembers,
		"the most members of gangs preparing at once; a placed gang beyond it keeps its GPUs and waits in line for the gangs before it to commit or abort (a gang larger than it starts alone)")
	fs.DurationVar(&c.Dispatch.StartTimeout, "gang-start-timeout", dispatch.DefaultStartTimeout, "how long after the commit every member of a gang has to be Running (image pull included) before the gang is torn down whole and requeued (reason StartTimeout)")
	fs.IntVar(&c.Scheduler.CycleNice, "scheduler-cycle-nice", 0,
		"nice value of the leader's scheduling-cycle thread alone, -20 to 19 (0: the process's); below the process's needs CAP_SYS_NICE, "+
			"without which the hub logs it and runs the cycle at the process's (docs/scheduling.md, \"The cycle's thread\")")
	fs.DurationVar(&c.Scheduler.SlowCycle, "scheduler-slow-cycle", scheduler.DefaultSlowCycle,
		"a scheduling cycle that takes this long or longer is logged with its phases, their CPU time and what it waited for (\"slow scheduling cycle\"); 0 or less: the default")
	fs.DurationVar(&c.AgentCertValidity, "agent-cert-validity", 0, "lifetime of agent client certificates (default 1 year)")
	fs.DurationVar(&c.UserCertValidity, "user-cert-validity", 0, "lifetime of user client certificates, and the longest `shoal user create/renew --cert-validity` may ask for (default 1 year)")
	addOIDCFlags(fs, c)
	fs.StringVar(&c.AdminConfig, "admin-config", c.AdminConfig, "shoal CLI config file to write the admin identity into (\"\" skips it)")
	fs.StringVar(&c.AdminContext, "admin-context", c.AdminContext, "name of the context written into --admin-config")
	addEndpointFlags(fs, c)
	addWebUIFlag(fs, &o.webUI)
	addMemoryFlag(fs, &o.memoryLimit)
	addHAFlags(fs, c)
	addRetentionFlags(fs, c)
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, "file to append one JSON line per mutating API call to (\"-\": stderr; \"\": no audit log); see docs/security.md")
}

// flagNames are the flags behind the Config fields a ConfigError names.
var flagNames = map[string]string{
	"DataDir": "--data-dir", "Listen": "--listen", "AdvertiseAddress": "--advertise-address",
	"ClusterGrace": "--cluster-grace", "FenceTimeout": "--cluster-fence-timeout",
	"FenceMargin":    "--fence-margin",
	"Etcd.Endpoints": "--etcd-endpoints", "Etcd.CAFile": "--etcd-ca", "Etcd.CertFile": "--etcd-cert",
	"Etcd.KeyFile": "--etcd-key", "UserCertValidity": "--user-cert-validity",
	"OIDC.IssuerURL": "--oidc-issuer-url", "OIDC.ClientID": "--oidc-client-id",
}

func init() {
	for field, flag := range endpointFlagNames {
		flagNames[field] = flag
	}
	for field, flag := range haFlagNames {
		flagNames[field] = flag
	}
	for field, flag := range retentionFlagNames {
		flagNames[field] = flag
	}
}

// complete checks the flags, fills in defaults that depend on others and
// reads SHOAL_PREEMPT_AFTER; errors name the flags at fault.
func (o *options) complete() error {
	if err := o.cfg.Complete(); err != nil {
		var ce *app.ConfigError
		if !errors.As(err, &ce) {
			return err
		}
		return errors.New(ce.Message(func(field string) string { return flagNames[field] }))
	}
	if n := o.cfg.Scheduler.CycleNice; n < -20 || n > 19 {
		return fmt.Errorf("--scheduler-cycle-nice: %d is not a nice value (-20 to 19)", n)
	}
	mountWebUI(&o.cfg, o.webUI)
	if err := applyMemoryLimit(o.memoryLimit); err != nil {
		return err
	}
	if v := os.Getenv("SHOAL_PREEMPT_AFTER"); v != "" { // e.g. 0s in demos; the engine's default is 30m
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("SHOAL_PREEMPT_AFTER: %w", err)
		}
		o.cfg.SchedulerOptions = append(o.cfg.SchedulerOptions, scheduler.WithPlacementOptions(placement.WithPreemptAfter(d)))
	}
	return nil
}

// addOIDCFlags adds the --oidc-* flags, named and meant as kube-apiserver's.
func addOIDCFlags(fs *pflag.FlagSet, c *app.Config) {
	o := &c.OIDC
	fs.StringVar(&o.IssuerURL, "oidc-issuer-url", "", "https URL of the OIDC issuer whose ID tokens authenticate users (bearer tokens; \"\": none); see docs/security.md")
	fs.StringVar(&o.ClientID, "oidc-client-id", "", "client ID every accepted ID token must have in its audience (required with --oidc-issuer-url)")
	fs.StringVar(&o.UsernameClaim, "oidc-username-claim", "sub", "ID token claim that is the username `shoal user create --oidc-username` binds (with email, email_verified must not be false)")
	fs.StringVar(&o.UsernamePrefix, "oidc-username-prefix", "", "prefix put before the username claim's value")
	fs.StringVar(&o.GroupsClaim, "oidc-groups-claim", "", "ID token claim holding the user's groups, which `shoal user create --oidc-group` binds (\"\": groups are not read)")
	fs.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", "", "prefix put before every group")
	fs.StringVar(&o.CAFile, "oidc-ca-file", "", "PEM CA bundle that signed the issuer's serving certificate (default: the system roots)")
}
