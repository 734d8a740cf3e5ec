// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientTLSConfig returns the TLS configuration to dial the hub with ctx's
// identity: the context's CA as the only root, TLS 1.3, and the client
// certificate when the context has one (its key from KeyData or KeyFile,
// which the caller has made absolute).
func (ctx *Context) ClientTLSConfig() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ctx.CAData)) {
		return nil, fmt.Errorf("context %q: caData holds no PEM certificate", ctx.Name)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: ctx.ServerName}
	keyPEM := []byte(ctx.KeyData)
	if ctx.KeyData == "" && ctx.KeyFile != "" {
		b, err := os.ReadFile(ctx.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("context %q: keyFile: %w", ctx.Name, err)
		}
		keyPEM = b
	}
	if ctx.CertData != "" || len(keyPEM) > 0 {
		cert, err := tls.X509KeyPair([]byte(ctx.CertData), keyPEM)
		if err != nil {
			return nil, fmt.Errorf("context %q: client certificate: %w", ctx.Name, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
