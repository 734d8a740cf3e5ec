// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"crypto/x509"
	"time"
)

// WrapSigner replaces r's CSR signer with wrap(signer), for tests.
func (r *Registry) WrapSigner(wrap func(sign func([]byte, string, time.Duration) (*x509.Certificate, []byte, error)) func([]byte, string, time.Duration) (*x509.Certificate, []byte, error)) {
	r.signCSR = wrap(r.signCSR)
}
