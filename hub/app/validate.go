// SPDX-License-Identifier: Apache-2.0

package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

// ConfigError is an invalid Config. Fields names the fields at fault (Go
// names, e.g. "Etcd.CertFile"); Message says what is wrong.
type ConfigError struct {
	Fields []string
	format string // the message, with a %s for each name in Fields, in order
	args   []any  // further values, after the names
}

func (e *ConfigError) Error() string {
	return "hub config: " + e.Message(func(field string) string { return field })
}

// Message says what is wrong, naming each field as name gives it (the
// command line names the flag that sets it).
func (e *ConfigError) Message(name func(field string) string) string {
	var names []any
	for _, f := range e.Fields {
		names = append(names, name(f))
	}
	return fmt.Sprintf(e.format, append(names, e.args...)...)
}

// Validate checks the Config; its errors are *ConfigError.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return &ConfigError{Fields: []string{"DataDir"}, format: "%s must not be empty"}
	}
	if err := c.validateRetention(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return &ConfigError{Fields: []string{"Listen"}, format: "%s %q: want host:port: %v", args: []any{c.Listen, err}}
	}
	if c.ClusterGrace <= 0 || c.FenceTimeout <= c.ClusterGrace {
		return &ConfigError{Fields: []string{"ClusterGrace", "FenceTimeout"}, format: "want 0 < %[1]s (%[3]s) < %[2]s (%[4]s)",
			args: []any{c.ClusterGrace, c.FenceTimeout}}
	}
	if c.FenceMargin != 0 && c.FenceMargin < time.Second {
		return &ConfigError{Fields: []string{"FenceMargin"}, format: "%s %s: want at least 1s (it covers the agent's fence check interval, up to a second, and the stop of its pods)",
			args: []any{c.FenceMargin}}
	}
	e := c.Etcd
	if len(e.Endpoints) == 0 && (e.CAFile != "" || e.CertFile != "" || e.KeyFile != "") {
		return &ConfigError{Fields: []string{"Etcd.CAFile", "Etcd.CertFile", "Etcd.KeyFile", "Etcd.Endpoints"},
			format: "%s/%s/%s need %s"}
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return &ConfigError{Fields: []string{"Etcd.CertFile", "Etcd.KeyFile"}, format: "%s and %s go together"}
	}
	if plain := plaintextEndpoints(e.Endpoints); len(plain) > 0 && !e.InsecureAllowPlaintext {
		return &ConfigError{Fields: []string{"Etcd.Endpoints", "Etcd.InsecureAllowPlaintext"},
			format: "%s: %q is not https://: etcd holds every job and credential record; use TLS (https:// with a CA, client certificate and key) or, knowingly, %s",
			args:   []any{plain[0]}}
	}
	if c.PKIKeyFile != "" && len(e.Endpoints) == 0 {
		return &ConfigError{Fields: []string{"PKIKeyFile", "Etcd.Endpoints"},
			format: "%s shares the hub CA through an external etcd: it needs %s (an embedded etcd is one replica's)"}
	}
	if c.UserCertValidity < 0 {
		return &ConfigError{Fields: []string{"UserCertValidity"}, format: "%s %s is negative", args: []any{c.UserCertValidity}}
	}
	if err := c.OIDC.Validate(); err != nil {
		return &ConfigError{Fields: []string{"OIDC.IssuerURL", "OIDC.ClientID"}, format: "%s, %s: %v", args: []any{err}}
	}
	return c.validateEndpoints()
}

// validateEndpoints checks the HTTP endpoints: /metrics and /readyz's
// detail are plain only on loopback.
func (c *Config) validateEndpoints() error {
	err := endpoint.Config{Addr: c.HTTPListen, TLS: c.HTTPTLS}.Validate()
	switch {
	case errors.Is(err, endpoint.ErrExposed):
		return &ConfigError{Fields: []string{"HTTPListen", "HTTPTLS.CertFile", "HTTPTLS.KeyFile", "HTTPTLS.ClientCAFile", "HealthListen"},
			format: "%s %q is not a loopback address: /metrics there needs TLS with client certificates (%s, %s, %s); for kubelet probes use %s, which serves /healthz and /readyz only",
			args:   []any{c.HTTPListen}}
	case errors.Is(err, endpoint.ErrIncompleteTLS):
		return &ConfigError{Fields: []string{"HTTPTLS.CertFile", "HTTPTLS.KeyFile", "HTTPTLS.ClientCAFile"}, format: "%s, %s and %s go together"}
	case err != nil:
		return &ConfigError{Fields: []string{"HTTPListen"}, format: "%s: %v", args: []any{err}}
	}
	if c.HealthListen != "" {
		if _, _, err := net.SplitHostPort(c.HealthListen); err != nil {
			return &ConfigError{Fields: []string{"HealthListen"}, format: "%s %q: want host:port: %v", args: []any{c.HealthListen, err}}
		}
	}
	if c.RESTListen != "" {
		if _, _, err := net.SplitHostPort(c.RESTListen); err != nil {
			return &ConfigError{Fields: []string{"RESTListen"}, format: "%s %q: want host:port: %v", args: []any{c.RESTListen, err}}
		}
	}
	return nil
}

// Complete validates the Config and fills in AdvertiseAddress and
// Identity, which default from other fields and from this host.
func (c *Config) Complete() error {
	if err := c.Validate(); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(c.Listen)
	if c.AdvertiseAddress == "" && c.ServiceName != "" {
		c.AdvertiseAddress = net.JoinHostPort(c.ServiceName, port)
	} else if c.AdvertiseAddress == "" {
		c.AdvertiseAddress = c.Listen
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			name, err := os.Hostname()
			if err != nil {
				return &ConfigError{Fields: []string{"AdvertiseAddress"},
					format: "%s is needed when listening on all addresses: %v", args: []any{err}}
			}
			c.AdvertiseAddress = net.JoinHostPort(name, port)
		}
	} else if _, _, err := net.SplitHostPort(c.AdvertiseAddress); err != nil {
		c.AdvertiseAddress = net.JoinHostPort(c.AdvertiseAddress, port)
	}
	if c.Identity == "" {
		name, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s-%d", name, os.Getpid())
	}
	return nil
}

// ServerHosts are the names and IPs the serving certificate covers:
// Hostnames, the Service's name, every peer's host, the advertised host and
// the listen host unless it is the unspecified address.
func (c *Config) ServerHosts() []string {
	hosts := append([]string{}, c.Hostnames...)
	if c.ServiceName != "" {
		hosts = append(hosts, c.ServiceName)
	}
	for _, p := range c.Peers {
		if h, _, err := net.SplitHostPort(p); err == nil {
			hosts = append(hosts, h)
		} else {
			hosts = append(hosts, p)
		}
	}
	if h, _, err := net.SplitHostPort(c.AdvertiseAddress); err == nil {
		hosts = append(hosts, h)
	}
	if h, _, err := net.SplitHostPort(c.Listen); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
