// SPDX-License-Identifier: Apache-2.0

package pki_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/pki"
)

// fuzzUser is the user every fuzzed user CSR is signed for.
const fuzzUser = "alice"

// userAcceptable is an independent statement of which CSRs the hub signs
// for fuzzUser: as for agents, but the CN must be empty or the user's.
func userAcceptable(der []byte) bool {
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
	return cn == "" || cn == pki.UserCommonName(fuzzUser)
}

// FuzzSignUserCSR feeds arbitrary certificate requests to SignUserCSR, the
// CA call behind `shoal user create --csr` and `shoal user renew`.
// Properties: it signs exactly the acceptable requests (else ErrBadCSR); a
// signed certificate is a client certificate of the CA for the CSR's key,
// names the user (CN and O, whatever the CSR asked, an admin's or an
// agent's included), carries no SANs, lives the asked validity, and maps to
// the user identity.
func FuzzSignUserCSR(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a weak key the CA must refuse
	if err != nil {
		f.Fatal(err)
	}
	user := pki.UserCommonName(fuzzUser)
	for _, der := range [][]byte{
		csrDER(f, ec, user), csrDER(f, ec, ""), csrDER(f, ed, user, "evil.example.com"), csrDER(f, rsa1024, user),
		csrDER(f, ec, pki.AdminCommonName), csrDER(f, ec, pki.AgentCommonName(fuzzCluster)), csrDER(f, ec, pki.UserCommonName("bob")),
		{0x30, 0x03, 0x02, 0x01, 0x00},
	} {
		f.Add(der)
		f.Add(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	}
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
		want := der != nil && userAcceptable(der)
		start := time.Now()
		cert, _, err := ca.SignUserCSR(in, fuzzUser, time.Hour)
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
		if cert.Subject.CommonName != user || !slices.Equal(cert.Subject.Organization, []string{pki.UserGroup}) {
			t.Fatalf("signed subject %v, want CN=%s O=%s", cert.Subject, user, pki.UserGroup)
		}
		if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA {
			t.Fatalf("signed ExtKeyUsage %v IsCA %v, want a client certificate", cert.ExtKeyUsage, cert.IsCA)
		}
		if len(cert.DNSNames)+len(cert.IPAddresses)+len(cert.URIs)+len(cert.EmailAddresses) != 0 {
			t.Fatalf("signed certificate carries SANs")
		}
		if life := cert.NotAfter.Sub(start); life > time.Hour || life < time.Hour-time.Minute {
			t.Fatalf("certificate lives %s, want 1h", life)
		}
		if pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(csr.PublicKey) {
			t.Fatalf("signed key %T is not the CSR's %T", cert.PublicKey, csr.PublicKey)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("signed certificate does not verify against the CA: %v", err)
		}
		if id, err := pki.IdentityOf(cert); err != nil || id.Role != pki.RoleUser || id.User != fuzzUser {
			t.Fatalf("identity %+v, %v; want user %s", id, err, fuzzUser)
		}
	})
}
