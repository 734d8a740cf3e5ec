// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	full := TLSFiles{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"disabled", Config{}, nil},
		{"loopback v4", Config{Addr: "127.0.0.1:8080"}, nil},
		{"loopback v6", Config{Addr: "[::1]:8080"}, nil},
		{"localhost", Config{Addr: "localhost:8080"}, nil},
		{"all addresses", Config{Addr: ":8080"}, ErrExposed},
		{"unspecified", Config{Addr: "0.0.0.0:8080"}, ErrExposed},
		{"pod IP", Config{Addr: "10.1.2.3:8080"}, ErrExposed},
		{"host name", Config{Addr: "hub.example.com:8080"}, ErrExposed},
		{"exposed with TLS", Config{Addr: "0.0.0.0:8080", TLS: full}, nil},
		{"TLS without client CA", Config{Addr: "0.0.0.0:8080", TLS: TLSFiles{CertFile: "c", KeyFile: "k"}}, ErrIncompleteTLS},
		{"loopback with partial TLS", Config{Addr: "127.0.0.1:8080", TLS: TLSFiles{ClientCAFile: "ca"}}, ErrIncompleteTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Validate(%+v) = %v, want %v", tt.cfg, err, tt.want)
			}
		})
	}
	if err := (Config{Addr: "8080"}).Validate(); err == nil {
		t.Fatal("an address without a port was accepted")
	}
}

// TestListenRefusesExposedPlainHTTP: Listen never binds a plain
// non-loopback address.
func TestListenRefusesExposedPlainHTTP(t *testing.T) {
	l, err := Config{Addr: "0.0.0.0:0"}.Listen()
	if !errors.Is(err, ErrExposed) {
		if l != nil {
			_ = l.Close()
		}
		t.Fatalf("Listen on 0.0.0.0 without TLS: %v, want ErrExposed", err)
	}
}

type pair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func issue(t *testing.T, cn string, parent *pair, server bool) *pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent.cert, parent.key
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &pair{cert: c, key: key}
}

func (p *pair) write(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	kder, err := x509.MarshalECPrivateKey(p.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func (p *pair) tls() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{p.cert.Raw}, PrivateKey: p.key, Leaf: p.cert}
}

// TestListenTLSRequiresClientCertificate: over TLS, a client without a
// certificate and one with a certificate of another CA are refused; one
// from the client CA gets through.
func TestListenTLSRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, other := issue(t, "ca", nil, false), issue(t, "other-ca", nil, false)
	serverCert, serverKey := issue(t, "server", ca, true).write(t, dir, "server")
	caFile, _ := ca.write(t, dir, "ca")
	l, err := Config{Addr: "127.0.0.1:0", TLS: TLSFiles{CertFile: serverCert, KeyFile: serverKey, ClientCAFile: caFile}}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	get := func(certs ...tls.Certificate) (string, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
		resp, err := c.Get("https://" + l.Addr().String() + "/metrics")
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get(); err == nil {
		t.Fatalf("client without a certificate got %q", body)
	}
	if body, err := get(issue(t, "intruder", other, false).tls()); err == nil {
		t.Fatalf("client with another CA's certificate got %q", body)
	}
	body, err := get(issue(t, "prometheus", ca, false).tls())
	if err != nil || body != "secret" {
		t.Fatalf("client of the client CA: %q, %v", body, err)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + l.Addr().String() + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP got through the TLS endpoint")
		}
	}
}

func TestHealthHandler(t *testing.T) {
	failing := func(context.Context) error { return errors.New("etcd at 10.0.0.9:2379 unreachable") }
	for _, detail := range []bool{false, true} {
		h := HealthHandler(failing, detail)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("detail=%v: /readyz %d, want 503", detail, rec.Code)
		}
		if got := strings.Contains(rec.Body.String(), "10.0.0.9"); got != detail {
			t.Fatalf("detail=%v: /readyz body %q", detail, rec.Body.String())
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/healthz %d", rec.Code)
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusNotFound {
			t.Fatalf("the health handler serves /metrics: %d", rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	HealthHandler(func(context.Context) error { return nil }, false).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("ready /readyz %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	HealthHandler(nil, false).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("/readyz without a check: %d, want 404", rec.Code)
	}
}
