// SPDX-License-Identifier: Apache-2.0

package pki_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/pki"
)

// fuzzCluster is the cluster every fuzzed CSR is signed for.
const fuzzCluster = "eu-1"

// csrDER returns a DER certificate request for key with subject CN cn.
func csrDER(f *testing.F, key crypto.Signer, cn string, dns ...string) []byte {
	f.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: []string{pki.AgentGroup}}, DNSNames: dns,
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}[:min(len(dns), 1)],
	}, key)
	if err != nil {
		f.Fatal(err)
	}
	return der
}

// acceptable is an independent statement of which CSRs the hub signs for
// fuzzCluster: a parseable request with a valid self-signature, an ECDSA,
// Ed25519 or >= 2048-bit RSA key, and a CN that is empty or the cluster's
// agent name.
func acceptable(der []byte) bool {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil || csr.CheckSignature() != nil {
		return false
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return false
		}
	default:
		return false
	}
	cn := csr.Subject.CommonName
	return cn == "" || cn == pki.AgentCommonName(fuzzCluster)
}

// FuzzSignAgentCSR feeds arbitrary certificate requests (PEM, or DER that
// the target wraps in a CERTIFICATE REQUEST block) to SignAgentCSR, the CA
// call behind an unauthenticated Register. Properties: it signs exactly the
// acceptable requests (a wrong CN, a bad signature, a weak RSA or another
// key type is refused with ErrBadCSR); a signed certificate is a client
// certificate of the CA for the CSR's key, names the cluster's agent (CN
// and O, whatever the CSR asked), carries none of the CSR's SANs, and maps
// to the agent identity of the cluster.
func FuzzSignAgentCSR(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a weak key the CA must refuse
	if err != nil {
		f.Fatal(err)
	}
	agent := pki.AgentCommonName(fuzzCluster)
	good := csrDER(f, ec, agent)
	tampered := bytes.Clone(good)
	tampered[len(tampered)-3] ^= 0x55
	for _, der := range [][]byte{
		good, csrDER(f, ec, ""), csrDER(f, ec384, agent, "evil.example.com"), csrDER(f, ed, agent), csrDER(f, rsa2048, ""),
		csrDER(f, rsa1024, agent), csrDER(f, ec, pki.AdminCommonName), csrDER(f, ec, pki.AgentCommonName("other")),
		csrDER(f, ec, agent+" "), tampered, {0x30, 0x03, 0x02, 0x01, 0x00},
	} {
		f.Add(der)
		f.Add(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	}
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: good}))

	ca, err := pki.LoadOrCreateCA(filepath.Join(f.TempDir(), "pki"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, der := data, []byte(nil)
		if block, _ := pem.Decode(data); block != nil {
			if block.Type == "CERTIFICATE REQUEST" {
				der = block.Bytes
			}
		} else {
			der = data
			in = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: data})
		}
		want := der != nil && acceptable(der)
		cert, certPEM, err := ca.SignAgentCSR(in, fuzzCluster, time.Hour)
		if err != nil {
			if want {
				t.Fatalf("refused an acceptable CSR: %v", err)
			}
			if !errors.Is(err, pki.ErrBadCSR) {
				t.Fatalf("refusal is not ErrBadCSR: %v", err)
			}
			return
		}
		if !want {
			t.Fatalf("signed an unacceptable CSR (%x) as %q", der, cert.Subject.CommonName)
		}
		csr, _ := x509.ParseCertificateRequest(der)
		parsed, perr := pki.ParseCertificatePEM(certPEM)
		if perr != nil || !parsed.Equal(cert) {
			t.Fatalf("certificate PEM does not hold the certificate: %v", perr)
		}
		if cert.Subject.CommonName != agent || !slices.Equal(cert.Subject.Organization, []string{pki.AgentGroup}) {
			t.Fatalf("signed subject %v, want CN=%s O=%s", cert.Subject, agent, pki.AgentGroup)
		}
		if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA {
			t.Fatalf("signed ExtKeyUsage %v IsCA %v, want a client certificate", cert.ExtKeyUsage, cert.IsCA)
		}
		if len(cert.DNSNames)+len(cert.IPAddresses)+len(cert.URIs)+len(cert.EmailAddresses) != 0 {
			t.Fatalf("signed certificate carries SANs %v %v %v %v", cert.DNSNames, cert.IPAddresses, cert.URIs, cert.EmailAddresses)
		}
		if pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(csr.PublicKey) {
			t.Fatalf("signed key %T is not the CSR's %T", cert.PublicKey, csr.PublicKey)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("signed certificate does not verify against the CA: %v", err)
		}
		id, err := pki.IdentityOf(cert)
		if err != nil || id.Role != pki.RoleAgent || id.Cluster != fuzzCluster {
			t.Fatalf("identity %+v, %v; want agent of %s", id, err, fuzzCluster)
		}
	})
}
