// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strconv"

	"github.com/spf13/pflag"
	"golang.org/x/time/rate"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/server"
)

// addEndpointFlags adds the flags that guard the hub's exposed endpoints:
// the HTTP endpoint's TLS, the health-only probe address, plaintext etcd
// and Register's rate limit.
func addEndpointFlags(fs *pflag.FlagSet, c *app.Config) {
	fs.StringVar(&c.HTTPTLS.CertFile, "http-tls-cert", "", "serving certificate of --http-listen (required, with --http-tls-key and --http-client-ca, unless --http-listen is a loopback address)")
	fs.StringVar(&c.HTTPTLS.KeyFile, "http-tls-key", "", "serving key of --http-listen")
	fs.StringVar(&c.HTTPTLS.ClientCAFile, "http-client-ca", "", "CA bundle the client certificates of --http-listen must chain to (a scraper's certificate)")
	fs.StringVar(&c.RESTListen, "rest-listen", c.RESTListen, "TLS address of the REST/JSON face of the API (the --listen serving certificate; the same client certificates, bearer tokens and authorization as gRPC; \"\" disables it); see docs/rest.md")
	fs.StringVar(&c.HealthListen, "health-listen", c.HealthListen, "plain HTTP address serving /healthz and /readyz only, without error detail, for kubelet probes (\"\" disables it)")
	fs.BoolVar(&c.Etcd.InsecureAllowPlaintext, "etcd-insecure-allow-plaintext", false, "accept http:// --etcd-endpoints (unencrypted, unauthenticated etcd traffic; logged as a warning)")
	limit := float64(server.DefaultRegisterLimit)
	fs.Var(newRateValue(&c.RegisterLimit, limit), "register-rate", "Register calls a second allowed per source IP once its burst is spent (negative: no limit)")
	fs.IntVar(&c.RegisterBurst, "register-burst", server.DefaultRegisterBurst, "Register calls a source IP may make at once")
}

// endpointFlagNames are the flags behind the Config fields of
// addEndpointFlags.
var endpointFlagNames = map[string]string{
	"HTTPListen": "--http-listen", "HTTPTLS.CertFile": "--http-tls-cert", "HTTPTLS.KeyFile": "--http-tls-key",
	"HTTPTLS.ClientCAFile": "--http-client-ca", "HealthListen": "--health-listen", "RESTListen": "--rest-listen",
	"Etcd.InsecureAllowPlaintext": "--etcd-insecure-allow-plaintext",
}

// rateValue is a rate.Limit flag (calls a second).
type rateValue struct{ l *rate.Limit }

func newRateValue(l *rate.Limit, def float64) *rateValue {
	*l = rate.Limit(def)
	return &rateValue{l: l}
}

func (v *rateValue) String() string {
	if v == nil || v.l == nil {
		return ""
	}
	return strconv.FormatFloat(float64(*v.l), 'g', -1, 64)
}

// Set parses a number of calls a second.
func (v *rateValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*v.l = rate.Limit(f)
	return nil
}

func (v *rateValue) Type() string { return "float" }
