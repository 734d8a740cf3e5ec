// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
)

// certClient dials the hub with a fixed client certificate and key.
func (h *hubProc) certClient(t *testing.T, caPEM string, cert tls.Certificate) *client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(caPEM))
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		MinVersion: tls.VersionTLS13, RootCAs: pool, Certificates: []tls.Certificate{cert}})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &client{jobs: shoalv1.NewJobsClient(conn), queues: shoalv1.NewQueuesClient(conn), users: shoalv1.NewUsersClient(conn)}
}

// contextKeyPair loads the certificate of context c of the config file at
// path with its key (keyData, or keyFile beside the config).
func contextKeyPair(t *testing.T, path string) (configv1alpha1.Context, tls.Certificate) {
	t.Helper()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := []byte(c.KeyData)
	if c.KeyData == "" {
		if keyPEM, err = os.ReadFile(filepath.Join(filepath.Dir(path), c.KeyFile)); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair([]byte(c.CertData), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return *c, pair
}

// TestUserCertificateFromCSRAndRenewal: a user's key is made on its
// machine (`shoal user csr`) and never reaches the hub; the certificate
// lives --cert-validity, at most the hub's --user-cert-validity; the
// holder renews it over its mTLS session (`shoal user renew`), after which
// the old certificate is refused and the new one works.
func TestUserCertificateFromCSRAndRenewal(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	h := startHub(t, "--audit-log", auditPath, "--user-cert-validity", "2h")
	ctx := testCtx(t)
	if out, err := h.shoal(t, "queue", "create", "a/b"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dir := t.TempDir()
	key, csr, config := filepath.Join(dir, "frank.key"), filepath.Join(dir, "frank.csr"), filepath.Join(dir, "frank.yaml")
	if out, code := shoalAs(t, h.configPath, "user", "csr", "--key-out", key, "--csr-out", csr); code != 0 {
		t.Fatalf("user csr: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	if out, err := h.shoal(t, "user", "create", "frank", "--role", "submitter", "--queue", "a/b", "--csr", csr,
		"--cert-validity", "3h", "--out", config); err == nil || !strings.Contains(out, "longer than the hub's maximum") {
		t.Fatalf("--cert-validity over the maximum: %v\n%s", err, out)
	}
	if out, err := h.shoal(t, "user", "create", "frank", "--role", "submitter", "--queue", "a/b", "--csr", csr,
		"--key-file", "frank.key", "--cert-validity", "90m", "--out", config); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c, pair := contextKeyPair(t, config)
	if c.KeyData != "" || c.KeyFile != "frank.key" {
		t.Fatalf("the config holds a key or names another key file: keyData %d bytes, keyFile %q", len(c.KeyData), c.KeyFile)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := os.ReadFile(key)
	block, _ := pem.Decode(keyPEM)
	own, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil || !own.(*ecdsa.PrivateKey).PublicKey.Equal(leaf.PublicKey) {
		t.Fatalf("the certificate is not for the key made on the user's machine (%v)", err)
	}
	if life := time.Until(leaf.NotAfter); life > 90*time.Minute || life < 80*time.Minute {
		t.Fatalf("certificate lives %s, want about 90m", life)
	}
	oldSerial := leaf.SerialNumber.Text(16)
	if out, code := shoalAs(t, config, "auth", "whoami"); code != 0 || !strings.Contains(out, "frank") ||
		!strings.Contains(out, "certificate") || !strings.Contains(out, oldSerial) {
		t.Fatalf("whoami: exit %d\n%s", code, out)
	}
	old := h.certClient(t, c.CAData, pair)
	if _, err := old.queues.Get(ctx, &shoalv1.GetQueueRequest{Name: "a/b"}); err != nil {
		t.Fatalf("frank reads a/b: %v", err)
	}

	// Renewal by the holder: a new key and serial; the old certificate is refused.
	out, code := shoalAs(t, config, "user", "renew", "--cert-validity", "1h")
	if code != 0 || !strings.Contains(out, "renewed") {
		t.Fatalf("user renew: exit %d\n%s", code, out)
	}
	c2, pair2 := contextKeyPair(t, config)
	leaf2, _ := x509.ParseCertificate(pair2.Certificate[0])
	if leaf2.SerialNumber.Text(16) == oldSerial || c2.KeyData != "" {
		t.Fatalf("renewal kept the serial or moved the key into the config")
	}
	if leaf2.PublicKey.(*ecdsa.PublicKey).Equal(leaf.PublicKey) {
		t.Fatal("renewal kept the key")
	}
	_, err = old.queues.Get(ctx, &shoalv1.GetQueueRequest{Name: "a/b"})
	wantMessage(t, err, codes.PermissionDenied, "not user \"frank\"'s current certificate", "the old certificate after renewal")
	_, err = old.users.RenewCertificate(ctx, &shoalv1.RenewUserCertificateRequest{})
	wantCode(t, err, codes.PermissionDenied, "renewing with the old certificate")
	if _, err := h.certClient(t, c2.CAData, pair2).queues.Get(ctx, &shoalv1.GetQueueRequest{Name: "a/b"}); err != nil {
		t.Fatalf("the renewed certificate reads a/b: %v", err)
	}
	if out, code := shoalAs(t, config, "auth", "whoami"); code != 0 || !strings.Contains(out, leaf2.SerialNumber.Text(16)) {
		t.Fatalf("whoami after renewal: exit %d\n%s", code, out)
	}
	// The bootstrap admin is reissued on the hub's machine, not renewed.
	if out, err := h.shoal(t, "user", "renew"); err == nil || !strings.Contains(out, "reissue-admin") {
		t.Errorf("admin renew: %v\n%s", err, out)
	}
	// A user with a hub-made key renews too, its new key staying in keyData.
	hubKey := filepath.Join(dir, "gina.yaml")
	if out, err := h.shoal(t, "user", "create", "gina", "--role", "viewer", "--queue", "a", "--out", hubKey); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g1, _ := contextKeyPair(t, hubKey)
	if out, code := shoalAs(t, hubKey, "user", "renew"); code != 0 {
		t.Fatalf("gina renews: exit %d\n%s", code, out)
	}
	if g2, _ := contextKeyPair(t, hubKey); g2.KeyData == "" || g2.KeyData == g1.KeyData || g2.CertData == g1.CertData {
		t.Fatal("gina's renewal did not replace certificate and key in keyData")
	}

	var renewals []audit.Entry
	for _, e := range readAudit(t, auditPath) {
		if e.Method == "Users/RenewCertificate" {
			renewals = append(renewals, e)
		}
	}
	want := []audit.Entry{
		{User: "frank", Auth: "certificate", Method: "Users/RenewCertificate", Object: "frank", Code: "OK"},
		// Refused at authentication, before the call named its record.
		{User: "frank", Auth: "certificate", Method: "Users/RenewCertificate", Code: "PermissionDenied"},
		{User: "admin", Auth: "certificate", Method: "Users/RenewCertificate", Object: "admin", Code: "PermissionDenied"},
		{User: "gina", Auth: "certificate", Method: "Users/RenewCertificate", Object: "gina", Code: "OK"},
	}
	if len(renewals) != len(want) {
		t.Fatalf("audit log has %d renewals, want %d: %+v", len(renewals), len(want), renewals)
	}
	for i := range want {
		if renewals[i] != want[i] {
			t.Errorf("renewal audit line %d = %+v, want %+v", i, renewals[i], want[i])
		}
	}
}
