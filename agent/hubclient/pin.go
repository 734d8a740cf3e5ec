// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/shoal-dev/shoal/federation/cahash"
)

// ErrCAHashMismatch means the hub did not present a CA whose public key has
// the pinned hash: it is not the hub the join token was made for.
var ErrCAHashMismatch = errors.New("hub CA does not match the pinned CA hash")

// pins splits a --ca-hash value: one hash, or several comma-separated
// (during a hub CA rotation the new and the previous CA's; as kubeadm
// accepts several --discovery-token-ca-cert-hash).
func pins(caHash string) []string {
	var out []string
	for _, h := range strings.Split(caHash, ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// pinnedTLSConfig trusts exactly the CAs with the given hashes. The hub
// must send its CA certificate in the serving chain: the leaf is verified
// against a chain certificate whose key matches a pin, before any request
// (and so the join token) is sent.
func pinnedTLSConfig(serverName, caHash string, failed *atomic.Bool) *tls.Config {
	want := pins(caHash)
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ServerName:         serverName,
		InsecureSkipVerify: true, // verified below against the pinned CA
		VerifyConnection: func(cs tls.ConnectionState) (err error) {
			defer func() {
				if err != nil {
					failed.Store(true)
				}
			}()
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: no certificate", ErrCAHashMismatch)
			}
			var lastErr error
			for _, c := range cs.PeerCertificates {
				if !slices.Contains(want, cahash.Of(c)) {
					continue
				}
				roots := x509.NewCertPool()
				roots.AddCert(c)
				inter := x509.NewCertPool()
				for _, ic := range cs.PeerCertificates[1:] {
					inter.AddCert(ic)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
					Roots: roots, Intermediates: inter, DNSName: serverName,
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
				})
				if err == nil {
					return nil
				}
				lastErr = err
			}
			if lastErr != nil {
				return fmt.Errorf("%w: %v", ErrCAHashMismatch, lastErr)
			}
			return fmt.Errorf("%w: the hub's chain holds no certificate with hash %s", ErrCAHashMismatch, strings.Join(want, ","))
		},
	}
}
