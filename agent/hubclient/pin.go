// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/shoal-dev/shoal/federation/cahash"
)

// ErrCAHashMismatch means the hub did not present a CA whose public key has
// the pinned hash: it is not the hub the join token was made for.
var ErrCAHashMismatch = errors.New("hub CA does not match the pinned CA hash")

// pinnedTLSConfig trusts exactly the CA with the given hash. The hub must
// send its CA certificate in the serving chain: the leaf is verified against
// the chain certificate whose key matches the pin, before any request (and so
// the join token) is sent.
func pinnedTLSConfig(serverName, caHash string, failed *atomic.Bool) *tls.Config {
	want := strings.ToLower(strings.TrimSpace(caHash))
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
			for _, c := range cs.PeerCertificates {
				if cahash.Of(c) != want {
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
				if err != nil {
					return fmt.Errorf("%w: %v", ErrCAHashMismatch, err)
				}
				return nil
			}
			return fmt.Errorf("%w: the hub's chain holds no certificate with hash %s", ErrCAHashMismatch, want)
		},
	}
}
