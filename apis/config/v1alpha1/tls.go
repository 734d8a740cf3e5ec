// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// ClientTLSConfig returns the TLS configuration to dial the hub with ctx's
// identity: the context's CA as the only root, TLS 1.3, and the client
// certificate when the context has one.
func (ctx *Context) ClientTLSConfig() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ctx.CAData)) {
		return nil, fmt.Errorf("context %q: caData holds no PEM certificate", ctx.Name)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: ctx.ServerName}
	if ctx.CertData != "" || ctx.KeyData != "" {
		cert, err := tls.X509KeyPair([]byte(ctx.CertData), []byte(ctx.KeyData))
		if err != nil {
			return nil, fmt.Errorf("context %q: client certificate: %w", ctx.Name, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
