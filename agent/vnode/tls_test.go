// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-dev/shoal/test/framework"
)

var errFake = errors.New("hub API server unreachable")

func TestTLSConfig(t *testing.T) {
	if _, err := tlsConfig("127.0.0.1", nil, false); !errors.Is(err, ErrNoClientCA) {
		t.Errorf("no CA, any client not allowed: %v, want ErrNoClientCA", err)
	}
	cfg, err := tlsConfig("127.0.0.1", nil, true)
	if err != nil || cfg.ClientAuth != tls.RequestClientCert || cfg.ClientCAs != nil {
		t.Errorf("any client allowed: %v %v", cfg, err)
	}
	ca, err := framework.NewKubeletClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := LoadClientCAs(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = tlsConfig("127.0.0.1", pool, false)
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs != pool || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("with a CA: %+v %v", cfg, err)
	}
	if leaf := cfg.Certificates[0].Leaf; leaf != nil && leaf.IPAddresses[0].String() != "127.0.0.1" {
		t.Errorf("serving certificate for %v", leaf.IPAddresses)
	}
}

func TestLoadClientCAs(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "placeholder.crt")
	if err := os.WriteFile(empty, []byte("Replace this text with the CA certificate.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClientCAs(empty); err == nil {
		t.Error("a file without a certificate was accepted")
	}
	if _, err := LoadClientCAs(filepath.Join(dir, "missing.crt")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestListenVerifiesClients dials a kubelet endpoint's port: without a
// certificate, and with one of another CA, the handshake fails; with one
// of the client CA the request is served and sees the certificate's user.
func TestListenVerifiesClients(t *testing.T) {
	ca, err := framework.NewKubeletClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := framework.NewKubeletClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := LoadClientCAs(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	l, port, err := listen("127.0.0.1:0", "127.0.0.1", pool, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := certUser(r)
		_, _ = io.WriteString(w, u.name)
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	if port == 0 {
		t.Fatal("no port")
	}
	dial := func(certs ...tls.Certificate) (*tls.Conn, error) {
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true, Certificates: certs}) //nolint:gosec // the endpoint's certificate is self-signed
		if err != nil {
			return nil, err
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			_ = c.Close()
			return nil, err
		}
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		if string(buf[:n]) == "" {
			return nil, errors.New("empty answer")
		}
		return c, nil
	}
	if c, err := dial(); err == nil {
		_ = c.Close()
		t.Error("a client without a certificate was served")
	}
	stranger, err := other.Issue(framework.KubeletClientUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := dial(stranger); err == nil {
		_ = c.Close()
		t.Error("a client with a certificate of another CA was served")
	}
	good, err := ca.Issue("apiserver", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{good}}} //nolint:gosec // self-signed
	resp, err := (&http.Client{Transport: tr}).Get("https://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "apiserver" {
		t.Errorf("served user %q, want apiserver", body)
	}
}
