// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "config")
	var c ClientConfig
	c.SetContext(Context{Name: "prod", Hub: "hub.prod:7443", CAData: "ca", CertData: "cert", KeyData: "key"})
	c.SetContext(Context{Name: "dev", Hub: "127.0.0.1:7443"})
	c.SetContext(Context{Name: "prod", Hub: "hub2.prod:7443"})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600 (it holds a private key)", st.Mode().Perm())
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "shoal.dev/v1alpha1" || got.Kind != "Config" || got.CurrentContext != "prod" || len(got.Contexts) != 2 {
		t.Fatalf("loaded %+v, want apiVersion shoal.dev/v1alpha1, kind Config, current prod, 2 contexts", got)
	}
	if p, _ := got.Context("prod"); p == nil || p.Hub != "hub2.prod:7443" {
		t.Errorf("context prod = %+v, want the replaced hub2.prod:7443", p)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(filepath.Join(dir, "missing"))
	if !errors.Is(err, os.ErrNotExist) || c == nil || len(c.Contexts) != 0 {
		t.Errorf("missing file: %+v, %v; want an empty config and os.ErrNotExist", c, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("apiVersion: shoal.dev/v1alpha1\nkind: Config\ncontxts: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "parse "+bad) {
		t.Errorf("unknown field: error %v, want a strict parse error naming the file", err)
	}
}

func TestContextSelection(t *testing.T) {
	one := &ClientConfig{Contexts: []Context{{Name: "only"}}}
	if c, err := one.Context(""); err != nil || c.Name != "only" {
		t.Errorf("single context without currentContext: %v, %v", c, err)
	}
	two := &ClientConfig{Contexts: []Context{{Name: "a"}, {Name: "b"}}}
	if _, err := two.Context(""); err == nil || !strings.Contains(err.Error(), "no current context") {
		t.Errorf("two contexts, none current: error %v", err)
	}
	if _, err := two.Context("c"); err == nil || !strings.Contains(err.Error(), `no context "c"`) {
		t.Errorf("unknown context: error %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(PathEnv, "/tmp/x/config")
	if got := DefaultPath(); got != "/tmp/x/config" {
		t.Errorf("DefaultPath with $%s = %s", PathEnv, got)
	}
	t.Setenv(PathEnv, "")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); got != "/home/u/.shoal/config" {
		t.Errorf("DefaultPath = %s, want ~/.shoal/config", got)
	}
}

func TestClientTLSConfig(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	ctx := &Context{Name: "dev", CAData: string(certPEM), ServerName: "hub.local", CertData: string(certPEM), KeyData: string(keyPEM)}
	cfg, err := ctx.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 || cfg.ServerName != "hub.local" || len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Errorf("tls config %+v: want TLS 1.3, server name hub.local, one client certificate, the CA as root", cfg)
	}
	anon := &Context{Name: "anon", CAData: string(certPEM)}
	if cfg, err := anon.ClientTLSConfig(); err != nil || len(cfg.Certificates) != 0 {
		t.Errorf("context without identity: %v, %v", cfg, err)
	}
	if _, err := (&Context{Name: "x", CAData: "junk"}).ClientTLSConfig(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bad caData: error %v", err)
	}
	bad := &Context{Name: "y", CAData: string(certPEM), CertData: string(certPEM), KeyData: "junk"}
	if _, err := bad.ClientTLSConfig(); err == nil || !strings.Contains(err.Error(), "client certificate") {
		t.Errorf("bad key: error %v", err)
	}
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}
