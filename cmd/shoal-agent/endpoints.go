// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

// endpointOptions guard the agent's /metrics and /healthz: plain HTTP on
// loopback, TLS with client certificates elsewhere, and a health-only
// plain address for the kubelet's liveness probe.
type endpointOptions struct {
	tls          endpoint.TLSFiles
	healthListen string
}

func (o *endpointOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.tls.CertFile, "metrics-tls-cert", "", "serving certificate of --metrics-addr (required, with --metrics-tls-key and --metrics-client-ca, unless --metrics-addr is a loopback address)")
	fs.StringVar(&o.tls.KeyFile, "metrics-tls-key", "", "serving key of --metrics-addr")
	fs.StringVar(&o.tls.ClientCAFile, "metrics-client-ca", "", "CA bundle the client certificates of --metrics-addr must chain to")
	fs.StringVar(&o.healthListen, "health-listen", "", "plain HTTP address serving /healthz only, for the kubelet's liveness probe (\"\" disables it)")
}

// validate checks the endpoints with the flags' names in the errors.
func (o *endpointOptions) validate(metricsAddr string) error {
	err := endpoint.Config{Addr: metricsAddr, TLS: o.tls}.Validate()
	switch {
	case errors.Is(err, endpoint.ErrExposed):
		return fmt.Errorf("--metrics-addr %q is not a loopback address: /metrics there needs TLS with client certificates "+
			"(--metrics-tls-cert, --metrics-tls-key, --metrics-client-ca); for the kubelet's probe use --health-listen, which serves /healthz only", metricsAddr)
	case errors.Is(err, endpoint.ErrIncompleteTLS):
		return errors.New("--metrics-tls-cert, --metrics-tls-key and --metrics-client-ca go together")
	case err != nil:
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	if o.healthListen != "" {
		if _, _, err := net.SplitHostPort(o.healthListen); err != nil {
			return fmt.Errorf("--health-listen %q: want host:port: %w", o.healthListen, err)
		}
	}
	return nil
}

// listen binds the metrics and health listeners (nil when off).
func (o *endpointOptions) listen(metricsAddr string) (metrics, health net.Listener, err error) {
	if metrics, err = (endpoint.Config{Addr: metricsAddr, TLS: o.tls}).Listen(); err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr %s: %w", metricsAddr, err)
	}
	if o.healthListen != "" {
		if health, err = net.Listen("tcp", o.healthListen); err != nil {
			if metrics != nil {
				_ = metrics.Close()
			}
			return nil, nil, fmt.Errorf("--health-listen %s: %w", o.healthListen, err)
		}
	}
	return metrics, health, nil
}
