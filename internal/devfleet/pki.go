// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI file names under the fleet's pki/ directory.
const (
	caCertFile     = "ca.crt"
	caKeyFile      = "ca.key"
	servingCert    = "apiserver.crt"
	servingKey     = "apiserver.key"
	adminCertFile  = "admin.crt"
	adminKeyFile   = "admin.key"
	saPublicFile   = "sa.pub"
	saPrivateFile  = "sa.key"
	certValidity   = 365 * 24 * time.Hour
	adminUser      = "shoal-admin"
	adminGroup     = "system:masters"
	serviceIPFirst = "10.0.0.1"
)

// writePKI creates a CA for the fleet, one serving certificate all its
// kube-apiservers share (they all listen on 127.0.0.1), an admin client
// certificate in system:masters, and the service-account signing key.
func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shoal-dev-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIPFirst)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	admin := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	steps := []func() error{
		func() error { return writePEM(filepath.Join(dir, caCertFile), "CERTIFICATE", caDER) },
		func() error { return writeKey(filepath.Join(dir, caKeyFile), caKey) },
		func() error { return issue(dir, servingCert, servingKey, serving, ca, caKey) },
		func() error { return issue(dir, adminCertFile, adminKeyFile, admin, ca, caKey) },
		func() error { return writeSAKeys(dir) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("write fleet PKI: %w", err)
		}
	}
	return nil
}

func issue(dir, certName, keyName string, tmpl, ca *x509.Certificate, caKey crypto.Signer) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, certName), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, keyName), key)
}

func writeSAKeys(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, saPublicFile), "PUBLIC KEY", pub); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, saPrivateFile), key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
