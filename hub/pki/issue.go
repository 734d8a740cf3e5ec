// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Validity of the certificates the CA issues.
const (
	// ServerValidity is the serving certificate's lifetime; a new one is
	// issued at every hub start.
	ServerValidity = 365 * 24 * time.Hour
	// AdminValidity is the admin client certificate's lifetime.
	AdminValidity = 365 * 24 * time.Hour
	// DefaultAgentValidity is an agent certificate's lifetime unless configured.
	DefaultAgentValidity = 365 * 24 * time.Hour
)

// ErrBadCSR means an agent CSR that cannot be signed.
var ErrBadCSR = errors.New("pki: bad certificate signing request")

// ServerCertificate issues a serving certificate for the hub with the
// given DNS names and IP addresses (localhost and 127.0.0.1 are always included).
// The chain carries the CA certificate after the leaf, so that an agent can
// check the hub against its pinned --ca-hash before it sends a join token.
func (ca *CA) ServerCertificate(hosts []string) (tls.Certificate, error) {
	key, err := NewKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "shoal-hub", Organization: []string{"shoal"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range append([]string{"localhost", "127.0.0.1"}, hosts...) {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	cert, _, err := ca.sign(tmpl, key.Public(), ServerValidity)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw, ca.Cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

// ClientCertificate issues a client certificate for a new key; it returns
// the certificate and key in PEM.
func (ca *CA) ClientCertificate(commonName string, orgs []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	_, certPEM, err = ca.sign(clientTemplate(commonName, orgs), key.Public(), validity)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodePrivateKeyPEM(key)
	return certPEM, keyPEM, err
}

// AdminCertificate returns the admin client certificate kept beside the CA,
// issuing it on first use (and again when it expires within 30 days or
// was issued by a CA before the current one).
func (ca *CA) AdminCertificate() (certPEM, keyPEM []byte, err error) {
	certPath, keyPath := filepath.Join(ca.dir, adminCertFile), filepath.Join(ca.dir, adminKeyFile)
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		if cert, err := ParseCertificatePEM(certPEM); err == nil && ca.now().Add(30*24*time.Hour).Before(cert.NotAfter) && ca.Signed(cert) {
			return certPEM, keyPEM, nil
		}
	}
	certPEM, keyPEM, err = ca.ClientCertificate(AdminCommonName, []string{AdminGroup}, AdminValidity)
	if err != nil {
		return nil, nil, err
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// SignAgentCSR checks a PEM CSR (valid signature; an ECDSA, RSA ≥2048 or
// Ed25519 key; a subject that is empty or names this cluster's agent) and
// signs it as the agent of cluster. Problems are ErrBadCSR.
func (ca *CA) SignAgentCSR(csrPEM []byte, cluster string, validity time.Duration) (*x509.Certificate, []byte, error) {
	if validity <= 0 {
		validity = DefaultAgentValidity
	}
	return ca.signClientCSR(csrPEM, AgentCommonName(cluster), AgentGroup, validity)
}

// signClientCSR signs a client certificate CN=commonName, O=group for the
// key of a PEM CSR whose signature and key type check out and whose subject
// CN is empty or commonName (whatever else it asks for is ignored).
func (ca *CA) signClientCSR(csrPEM []byte, commonName, group string, validity time.Duration) (*x509.Certificate, []byte, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, nil, fmt.Errorf("%w: no PEM CERTIFICATE REQUEST block", ErrBadCSR)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, nil, fmt.Errorf("%w: signature: %v", ErrBadCSR, err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, nil, fmt.Errorf("%w: RSA key of %d bits, need at least 2048", ErrBadCSR, k.N.BitLen())
		}
	default:
		return nil, nil, fmt.Errorf("%w: unsupported key type %T", ErrBadCSR, k)
	}
	if cn := csr.Subject.CommonName; cn != "" && cn != commonName {
		return nil, nil, fmt.Errorf("%w: subject CN %q, want %q (or empty)", ErrBadCSR, cn, commonName)
	}
	return ca.sign(clientTemplate(commonName, []string{group}), csr.PublicKey, validity)
}

func clientTemplate(commonName string, orgs []string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: orgs},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// ServerTLSConfig is the hub's gRPC TLS configuration for one serving
// certificate of the current CA (see Serving.TLSConfig; the hub itself
// serves ServingCertificate's).
func (ca *CA) ServerTLSConfig(serving tls.Certificate) *tls.Config {
	return (&Serving{current: serving, ca: ca}).TLSConfig()
}
