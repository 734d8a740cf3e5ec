// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// openStore connects to the external etcd or starts the embedded one in
// DataDir/etcd. The replica itself (replica true) records its election
// sessions in DataDir and revokes those of its previous process; a
// subcommand beside it (rotate-ca) must not.
func openStore(ctx context.Context, c *Config, replica bool) (*store.Store, error) {
	tlsCfg, err := c.etcdTLS()
	if err != nil {
		return nil, err
	}
	if plain := plaintextEndpoints(c.Etcd.Endpoints); len(plain) > 0 {
		klog.FromContext(ctx).Info("WARNING: external etcd over plain http (--etcd-insecure-allow-plaintext): its traffic, every job and credential record included, is unencrypted and unauthenticated",
			"endpoints", plain)
	}
	sessions := ""
	if replica {
		sessions = filepath.Join(c.DataDir, "election-sessions")
	}
	return store.Open(ctx, store.Config{
		DataDir:     filepath.Join(c.DataDir, "etcd"),
		Endpoints:   c.Etcd.Endpoints,
		TLS:         tlsCfg,
		Prefix:      c.Etcd.Prefix,
		ElectionTTL: c.ElectionTTL,
		Embedded:    c.Embedded,
		SessionFile: sessions,
	})
}

// etcdTLS is the client TLS configuration for an external etcd (nil: plain
// http endpoints; system roots for https endpoints without a CA file).
func (c *Config) etcdTLS() (*tls.Config, error) {
	e := c.Etcd
	if e.CAFile == "" && e.CertFile == "" {
		for _, ep := range e.Endpoints {
			if strings.HasPrefix(ep, "https://") {
				return &tls.Config{MinVersion: tls.VersionTLS12}, nil
			}
		}
		return nil, nil
	}
	return store.ClientTLS(e.CAFile, e.CertFile, e.KeyFile)
}

// plaintextEndpoints are the endpoints that are not https://.
func plaintextEndpoints(eps []string) []string {
	var plain []string
	for _, ep := range eps {
		if !strings.HasPrefix(ep, "https://") {
			plain = append(plain, ep)
		}
	}
	return plain
}
