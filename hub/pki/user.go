// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// UserValidity is a user client certificate's lifetime.
const UserValidity = 365 * 24 * time.Hour

// UserCertificate issues a client certificate for a new key as user name;
// it returns the parsed certificate and the certificate and key in PEM.
func (ca *CA) UserCertificate(name string) (*x509.Certificate, []byte, []byte, error) {
	certPEM, keyPEM, err := ca.ClientCertificate(UserCommonName(name), []string{UserGroup}, UserValidity)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, certPEM, keyPEM, nil
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
