// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-dev/shoal/federation/cahash"
)

// File names under the PKI directory.
const (
	caCertFile    = "ca.crt"
	caKeyFile     = "ca.key"
	adminCertFile = "admin.crt"
	adminKeyFile  = "admin.key"
)

// CAValidity is how long a new hub CA is valid.
const CAValidity = 10 * 365 * 24 * time.Hour

// clockSkew backdates NotBefore so that slightly slow clocks accept new certificates.
const clockSkew = 5 * time.Minute

// CA is the hub's certificate authority.
type CA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// CertPEM is Cert in PEM, as handed to agents and the CLI.
	CertPEM []byte
	key     crypto.Signer
	dir     string
	now     func() time.Time
	// prev is the CA before Cert, set during a CA rotation's overlap
	// (rotate.go).
	prev *previousCA
}

// LoadOrCreateCA loads the CA kept in dir, or creates it (and dir, 0700)
// when dir holds none. The key file is written 0600.
func LoadOrCreateCA(dir string) (*CA, error) {
	ca, err := loadCA(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return ca, err
	}
	return createCA(dir)
}

func loadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate without its key in %s: %w", dir, err)
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", filepath.Join(dir, caCertFile), err)
	}
	key, err := ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", filepath.Join(dir, caKeyFile), err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("pki: %s and %s do not belong together (an interrupted rotate-ca?)",
			filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile))
	}
	ca := &CA{Cert: cert, CertPEM: certPEM, key: key, dir: dir, now: time.Now}
	if err := ca.loadRotation(); err != nil {
		return nil, err
	}
	return ca, nil
}

func createCA(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	key, cert, certPEM, err := newCACertificate("shoal-hub-ca", time.Now())
	if err != nil {
		return nil, err
	}
	if err := writeCA(dir, key, certPEM); err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key, dir: dir, now: time.Now}, nil
}

// caTemplate is the template of a hub CA certificate named cn.
func caTemplate(cn string, serial *big.Int, now time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"shoal"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
}

// newCACertificate creates a key and a self-signed CA certificate named cn.
func newCACertificate(cn string, now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := caTemplate(cn, serial, now)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// writeCA writes the CA key and certificate into dir.
func writeCA(dir string, key crypto.Signer, certPEM []byte) error {
	keyPEM, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return err
	}
	// Key first: a certificate without its key would block the next start.
	if err := writeFile(filepath.Join(dir, caKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, caCertFile), certPEM, 0o644)
}

// publicKeysEqual reports whether a and b are the same public key.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// Hash is the CA hash agents pin (see CAHash).
func (ca *CA) Hash() string { return cahash.Of(ca.Cert) }

// Pool is the pool of CAs whose client certificates the hub accepts: the
// CA, and during a rotation's overlap the previous CA too.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	if prev := ca.overlap(); prev != nil {
		p.AddCert(prev.cert)
	}
	return p
}

// sign issues a certificate for pub from tmpl (serial and validity are set here).
func (ca *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey, validity time.Duration) (*x509.Certificate, []byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := ca.now()
	tmpl.SerialNumber = serial
	// Backdated for slow clocks, by at most a tenth of the lifetime so
	// that short-lived certificates (tests, --agent-cert-validity) keep
	// most of theirs ahead of them.
	tmpl.NotBefore = now.Add(-min(clockSkew, validity/10))
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// writeFile writes atomically (temp file + rename) with mode perm.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
