// SPDX-License-Identifier: Apache-2.0

package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/cahash"
	"github.com/shoal-dev/shoal/hub/pki"
)

func TestCAPersistsAndKeyIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "ca.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if _, ok := ca.Cert.PublicKey.(*ecdsa.PublicKey); !ok || !ca.Cert.IsCA {
		t.Fatalf("CA key %T IsCA=%v, want ECDSA CA", ca.Cert.PublicKey, ca.Cert.IsCA)
	}
	again, err := pki.LoadOrCreateCA(dir)
	if err != nil || again.Hash() != ca.Hash() {
		t.Fatalf("reloaded CA hash %s, %v; want %s", again.Hash(), err, ca.Hash())
	}
	a1, _, err := ca.AdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	a2, _, _ := again.AdminCertificate()
	if string(a1) != string(a2) {
		t.Fatal("admin certificate re-issued on reload")
	}
}

func TestCAHash(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := ca.Hash()
	tests := []struct {
		in    string
		match bool
		err   bool
	}{
		{h, true, false},
		{strings.ToUpper(h[:7]) + strings.ToUpper(h[7:]), true, false},
		{"sha256:" + strings.Repeat("0", 64), false, false},
		{"sha256:abc", false, true},
		{"md5:" + h[7:], false, true},
		{"sha256:" + strings.Repeat("z", 64), false, true},
	}
	for _, tt := range tests {
		_, err := cahash.Parse(tt.in)
		if (err != nil) != tt.err || (err != nil && !errors.Is(err, cahash.ErrMalformed)) {
			t.Errorf("ParseCAHash(%q) error = %v, want error %v", tt.in, err, tt.err)
		}
		if got := cahash.Matches(ca.Cert, tt.in); got != tt.match {
			t.Errorf("MatchesCAHash(%q) = %v, want %v", tt.in, got, tt.match)
		}
	}
}

func TestSignAgentCSRAndIdentity(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := pki.NewKey()
	weakRSA, _ := rsa.GenerateKey(rand.Reader, 1024)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	csr := func(cn string, orgs ...string) []byte {
		b, err := pki.NewCSR(ecKey, cn, orgs...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	weak, _ := pki.NewCSR(weakRSA, "")
	ok384, _ := pki.NewCSR(p384, "")
	tests := []struct {
		name string
		csr  []byte
		bad  bool
	}{
		{"empty subject", csr(""), false},
		{"own CN", csr(pki.AgentCommonName("eu1"), pki.AgentGroup), false},
		{"P-384 key", ok384, false},
		{"admin CN", csr(pki.AdminCommonName, pki.AdminGroup), true},
		{"other cluster CN", csr(pki.AgentCommonName("us1")), true},
		{"1024-bit RSA", weak, true},
		{"not PEM", []byte("hello"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, _, err := ca.SignAgentCSR(tt.csr, "eu1", time.Hour)
			if tt.bad {
				if !errors.Is(err, pki.ErrBadCSR) {
					t.Fatalf("error = %v, want ErrBadCSR", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id, err := pki.IdentityOf(cert)
			if err != nil || id.Role != pki.RoleAgent || id.Cluster != "eu1" {
				t.Fatalf("identity %+v, %v; want agent eu1", id, err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Fatalf("agent certificate does not verify: %v", err)
			}
			if d := cert.NotAfter.Sub(cert.NotBefore); d > 2*time.Hour {
				t.Fatalf("validity %s, want about 1h", d)
			}
		})
	}
}

func TestIdentityOf(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cn      string
		orgs    []string
		role    pki.Role
		cluster string
	}{
		{pki.AdminCommonName, []string{pki.AdminGroup}, pki.RoleAdmin, ""},
		{pki.AgentCommonName("eu1"), []string{pki.AgentGroup}, pki.RoleAgent, "eu1"},
		{pki.AdminCommonName, []string{pki.AgentGroup}, pki.RoleNone, ""},
		{pki.AgentCommonName(""), []string{pki.AgentGroup}, pki.RoleNone, ""},
		{"someone", nil, pki.RoleNone, ""},
	}
	for _, tt := range tests {
		certPEM, _, err := ca.ClientCertificate(tt.cn, tt.orgs, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := pki.ParseCertificatePEM(certPEM)
		id, err := pki.IdentityOf(cert)
		if tt.role == pki.RoleNone {
			if !errors.Is(err, pki.ErrUnknownIdentity) {
				t.Errorf("%s %v: error %v, want ErrUnknownIdentity", tt.cn, tt.orgs, err)
			}
			continue
		}
		if err != nil || id.Role != tt.role || id.Cluster != tt.cluster {
			t.Errorf("%s %v: %+v, %v", tt.cn, tt.orgs, id, err)
		}
	}
}

func TestServerCertificateSANs(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ca.ServerCertificate([]string{"hub.example.com", "10.0.0.7", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "hub.example.com", "10.0.0.7"} {
		if err := sc.Leaf.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate does not cover %s: %v", host, err)
		}
	}
	if cfg := ca.ServerTLSConfig(sc); cfg.MinVersion != tls.VersionTLS13 || cfg.ClientAuth != tls.VerifyClientCertIfGiven {
		t.Errorf("TLS config min %x client auth %v", cfg.MinVersion, cfg.ClientAuth)
	}
}
