// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/hub/app"
)

// Environment variables that give the HA flags their defaults, for a
// StatefulSet that sets them from its own spec (docs/high-availability.md).
const (
	envServiceName = "SHOAL_HUB_SERVICE_NAME"
	envPeers       = "SHOAL_HUB_PEERS"
	envPKIKeyFile  = "SHOAL_HUB_PKI_ENCRYPTION_KEY_FILE"
)

// addHAFlags adds the flags of a replicated hub: its Service and peers
// (names on the serving certificate), the key that seals the shared CA in
// the store, and the election TTL. Each defaults from its environment
// variable.
func addHAFlags(fs *pflag.FlagSet, c *app.Config) {
	fs.StringVar(&c.ServiceName, "service-name", os.Getenv(envServiceName),
		"host name of the Service in front of the hub replicas (env "+envServiceName+"): on every replica's serving certificate, and the advertise address when --advertise-address is unset")
	fs.StringSliceVar(&c.Peers, "peers", splitList(os.Getenv(envPeers)),
		"every hub replica's host[:port], this one's included (env "+envPeers+", comma-separated): each host goes on the serving certificate")
	fs.StringVar(&c.PKIKeyFile, "pki-encryption-key-file", os.Getenv(envPKIKeyFile),
		"file with the base64 32-byte key that seals the hub CA and admin identity in the external etcd (env "+envPKIKeyFile+"); with it the replicas share the CA through the store, without it the CA stays in --data-dir/pki (one replica)")
	fs.DurationVar(&c.ElectionTTL, "election-ttl", c.ElectionTTL,
		"how long a crashed leader keeps the scheduler, dispatcher and rollout elections before a standby replica takes over (0: 10s; etcd rounds up to whole seconds, at least 2s)")
}

// haFlagNames are the flags behind the Config fields of addHAFlags.
var haFlagNames = map[string]string{
	"ServiceName": "--service-name", "Peers": "--peers", "PKIKeyFile": "--pki-encryption-key-file", "ElectionTTL": "--election-ttl",
}

// addSharedPKIFlags adds the flags that reach the CA shared through the
// store, for the subcommands that change it (rotate-ca, reissue-admin).
func addSharedPKIFlags(fs *pflag.FlagSet, c *app.Config) {
	fs.StringSliceVar(&c.Etcd.Endpoints, "etcd-endpoints", nil, "client URLs of the hub's external etcd, when the replicas share the CA through it (with --pki-encryption-key-file)")
	fs.StringVar(&c.Etcd.CAFile, "etcd-ca", "", "CA bundle that signed the external etcd's serving certificates")
	fs.StringVar(&c.Etcd.CertFile, "etcd-cert", "", "client certificate for the external etcd")
	fs.StringVar(&c.Etcd.KeyFile, "etcd-key", "", "client key for the external etcd")
	fs.StringVar(&c.Etcd.Prefix, "etcd-prefix", "", "key prefix in etcd (default /shoal/)")
	fs.BoolVar(&c.Etcd.InsecureAllowPlaintext, "etcd-insecure-allow-plaintext", false, "accept http:// --etcd-endpoints")
	fs.StringVar(&c.PKIKeyFile, "pki-encryption-key-file", os.Getenv(envPKIKeyFile), "file with the key that seals the shared CA in the store (env "+envPKIKeyFile+")")
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
