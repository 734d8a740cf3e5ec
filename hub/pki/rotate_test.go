// SPDX-License-Identifier: Apache-2.0

package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/cahash"
	"github.com/shoal-dev/shoal/hub/pki"
)

// agentCert signs a fresh key's CSR as cluster's agent and returns the TLS pair.
func agentCert(t *testing.T, ca *pki.CA, cluster string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.AgentCommonName(cluster))
	if err != nil {
		t.Fatal(err)
	}
	cert, certPEM, err := ca.SignAgentCSR(csr, cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := pki.EncodePrivateKeyPEM(key)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, cert
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// handshake runs a real TLS handshake against the hub's ServerTLSConfig: the
// client trusts roots and presents client; it returns the server's verdict
// on the client certificate and the client's on the server (nil, nil:
// both accepted).
func handshake(t *testing.T, srv *tls.Config, roots *x509.CertPool, client tls.Certificate) (serverErr, clientErr error) {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, srv)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3: the client certificate is checked after the
			// client's Finished; a read sees the verdict.
			_, err = s.Read(make([]byte, 1))
		}
		if err == nil && len(s.ConnectionState().VerifiedChains) == 0 {
			// A Go client sends no certificate that the server's
			// acceptable CAs do not list; the hub then sees none.
			err = errors.New("no verified client certificate")
		}
		_ = a.Close()
		done <- err
	}()
	c := tls.Client(b, &tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS13})
	clientErr = c.Handshake()
	if clientErr == nil {
		_, _ = c.Write([]byte{1})
	}
	_ = b.Close()
	return <-done, clientErr
}

// TestRotateCA: during the overlap the hub accepts client certificates of
// both CAs and clients trusting either CA verify it; the bundle holds both;
// certificates of the old CA are not "signed" by the current one (agents
// are told to renew); after the overlap the old CA's certificates are
// refused at the handshake and the chain and bundle hold the new CA only.
func TestRotateCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	old, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	oldAgent, oldAgentCert := agentCert(t, old, "eu1")
	oldAdmin, _, _ := old.AdminCertificate()

	ca, err := pki.RotateCA(dir, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Hash() == old.Hash() {
		t.Fatal("rotate-ca kept the CA key")
	}
	if _, err := pki.RotateCA(dir, time.Hour); !errors.Is(err, pki.ErrRotationInProgress) {
		t.Fatalf("second rotation during the overlap: %v, want ErrRotationInProgress", err)
	}
	ca, err = pki.LoadOrCreateCA(dir) // as a restarted hub does
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ca.Rotation()
	if !ok || r.Previous.Equal(old.Cert) == false || time.Until(r.Until) < 59*time.Minute {
		t.Fatalf("rotation after reload = %+v, %v; want the old CA until in an hour", r, ok)
	}
	if n := strings.Count(string(ca.BundlePEM()), "BEGIN CERTIFICATE"); n != 2 {
		t.Fatalf("bundle during the overlap holds %d certificates, want 2", n)
	}
	admin, _, err := ca.AdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	if ac, _ := pki.ParseCertificatePEM(admin); string(admin) == string(oldAdmin) || !ca.Signed(ac) {
		t.Fatal("the bootstrap admin certificate was not reissued from the new CA")
	}
	newAgent, newAgentCert := agentCert(t, ca, "eu1")
	if ca.Signed(oldAgentCert) || !ca.Signed(newAgentCert) {
		t.Fatalf("Signed(old)=%v Signed(new)=%v, want false, true", ca.Signed(oldAgentCert), ca.Signed(newAgentCert))
	}
	serving, err := ca.ServingCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serving.TLSConfig()
	for _, tc := range []struct {
		name   string
		roots  *x509.CertPool
		client tls.Certificate
	}{
		{"old-CA agent trusting only the old CA", poolOf(old.Cert), oldAgent},
		{"old-CA agent trusting the bundle", poolOf(old.Cert, ca.Cert), oldAgent},
		{"new-CA agent trusting the bundle", poolOf(ca.Cert, old.Cert), newAgent},
	} {
		if sErr, cErr := handshake(t, srv, tc.roots, tc.client); sErr != nil || cErr != nil {
			t.Errorf("%s during the overlap: server %v, client %v", tc.name, sErr, cErr)
		}
	}
	// A join token printed before the rotation pins the old CA's hash;
	// one printed during the overlap both hashes: the served chain holds
	// the old CA, which signed the served certificate.
	if h := ca.Hashes(); len(h) != 2 || h[0] != ca.Hash() || h[1] != old.Hash() {
		t.Fatalf("hashes during the overlap = %v, want new and old", h)
	}
	chain := srv.Certificates[0].Certificate
	leaf, _ := x509.ParseCertificate(chain[0])
	last, _ := x509.ParseCertificate(chain[len(chain)-1])
	if cahash.Of(last) != old.Hash() || leaf.CheckSignatureFrom(old.Cert) != nil {
		t.Fatal("during the overlap the hub does not serve a certificate of the old CA with the old CA in its chain")
	}

	// The overlap ends: the old CA is dropped without a restart.
	pki.SetNow(ca, func() time.Time { return r.Until.Add(time.Second) })
	if _, ok := ca.Rotation(); ok {
		t.Fatal("rotation still running after its end")
	}
	if n := strings.Count(string(ca.BundlePEM()), "BEGIN CERTIFICATE"); n != 1 {
		t.Fatalf("bundle after the overlap holds %d certificates, want 1", n)
	}
	if sErr, cErr := handshake(t, srv, poolOf(ca.Cert), oldAgent); sErr == nil && cErr == nil {
		t.Fatal("a certificate of the old CA was accepted after the overlap")
	}
	if sErr, cErr := handshake(t, srv, poolOf(ca.Cert), newAgent); sErr != nil || cErr != nil {
		t.Fatalf("new-CA agent after the overlap: server %v, client %v", sErr, cErr)
	}
	if sErr, cErr := handshake(t, srv, poolOf(old.Cert), newAgent); cErr == nil {
		t.Fatalf("a client trusting only the old CA verified the hub after the overlap (server %v)", sErr)
	}
	if h := ca.Hashes(); len(h) != 1 {
		t.Fatalf("hashes after the overlap = %v, want the new CA's", h)
	}

	if err := pki.FinishRotation(dir); err != nil {
		t.Fatal(err)
	}
	again, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Rotation(); ok || again.Hash() != ca.Hash() {
		t.Fatal("after FinishRotation the hub still trusts the previous CA, or lost the new one")
	}
	if _, err := pki.RotateCA(dir, time.Hour); err != nil {
		t.Fatalf("a rotation after the last one finished: %v", err)
	}
}

// TestShortCertificatesKeepTheirLifetime: the backdating for slow clocks
// takes at most a tenth of a short lifetime.
func TestShortCertificatesKeepTheirLifetime(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key, "")
	cert, _, err := ca.SignAgentCSR(csr, "eu1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life > 34*time.Second || time.Until(cert.NotAfter) < 28*time.Second {
		t.Fatalf("30 s certificate valid %v, until %v from now", life, time.Until(cert.NotAfter))
	}
}
