package app

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// ConfigError is an invalid Config: Fields names the fields at fault (Go
// names, e.g. "Etcd.CertFile"), Reason says what is wrong.
type ConfigError struct {
	Fields []string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("hub config %s: %s", strings.Join(e.Fields, ", "), e.Reason)
}

func invalid(reason string, fields ...string) error {
	return &ConfigError{Fields: fields, Reason: reason}
}

// Validate checks the Config; its errors are *ConfigError.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return invalid("must not be empty", "DataDir")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return invalid(fmt.Sprintf("%q: want host:port: %v", c.Listen, err), "Listen")
	}
	if c.ClusterGrace <= 0 || c.FenceTimeout <= c.ClusterGrace {
		return invalid(fmt.Sprintf("want 0 < grace (%s) < fence timeout (%s)", c.ClusterGrace, c.FenceTimeout),
			"ClusterGrace", "FenceTimeout")
	}
	e := c.Etcd
	if len(e.Endpoints) == 0 && (e.CAFile != "" || e.CertFile != "" || e.KeyFile != "") {
		return invalid("TLS files need endpoints", "Etcd.CAFile", "Etcd.CertFile", "Etcd.KeyFile", "Etcd.Endpoints")
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return invalid("certificate and key go together", "Etcd.CertFile", "Etcd.KeyFile")
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
	if c.AdvertiseAddress == "" {
		c.AdvertiseAddress = c.Listen
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			name, err := os.Hostname()
			if err != nil {
				return invalid(fmt.Sprintf("needed when listening on all addresses: %v", err), "AdvertiseAddress")
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
// Hostnames, the advertised host and the listen host unless it is the
// unspecified address.
func (c *Config) ServerHosts() []string {
	hosts := append([]string{}, c.Hostnames...)
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
