// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// UserValidity is a user client certificate's lifetime unless configured
// (shoal-hub --user-cert-validity).
const UserValidity = 365 * 24 * time.Hour

// UserCertificate issues a client certificate for a new key as user name,
// valid for validity (0: UserValidity); it returns the parsed certificate
// and the certificate and key in PEM.
func (ca *CA) UserCertificate(name string, validity time.Duration) (*x509.Certificate, []byte, []byte, error) {
	if validity <= 0 {
		validity = UserValidity
	}
	certPEM, keyPEM, err := ca.ClientCertificate(UserCommonName(name), []string{UserGroup}, validity)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, certPEM, keyPEM, nil
}

// SignUserCSR checks a PEM CSR the user made for its own key (valid
// signature; an ECDSA, RSA ≥2048 or Ed25519 key; a subject that is empty
// or names this user) and signs it as user name for validity (0:
// UserValidity). Problems are ErrBadCSR. The private key never reaches
// the hub.
func (ca *CA) SignUserCSR(csrPEM []byte, name string, validity time.Duration) (*x509.Certificate, []byte, error) {
	if validity <= 0 {
		validity = UserValidity
	}
	return ca.signClientCSR(csrPEM, UserCommonName(name), UserGroup, validity)
}

// AdminSerial is the serial of the bootstrap admin certificate kept beside
// the CA (the one AdminCertificate returns).
func (ca *CA) AdminSerial() (string, error) {
	certPEM, err := os.ReadFile(filepath.Join(ca.dir, adminCertFile))
	if err != nil {
		return "", fmt.Errorf("read the bootstrap admin certificate: %w", err)
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return "", err
	}
	return SerialString(cert), nil
}

// ReissueAdminCertificate issues a new bootstrap admin certificate (a new
// key and serial) and keeps it beside the CA in place of the old one: the
// way back in after the bootstrap admin was revoked (`shoal-hub
// reissue-admin`, run where the CA directory is).
func (ca *CA) ReissueAdminCertificate() (certPEM, keyPEM []byte, err error) {
	for _, f := range []string{adminCertFile, adminKeyFile} {
		if err := os.Remove(filepath.Join(ca.dir, f)); err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
	}
	return ca.AdminCertificate()
}
