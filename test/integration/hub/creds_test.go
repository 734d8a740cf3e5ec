// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
	"github.com/shoal-dev/shoal/hub/pki"
)

// renew renews a's certificate the way shoal-agent does: a new key, its
// CSR over a's mTLS connection. It returns the new pair and the bundle.
func (a *agent) renew(t *testing.T, ctx context.Context) (tls.Certificate, []byte) {
	t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.AgentCommonName(a.name))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.cl.RenewCertificate(ctx, &shoalv1.RenewCertificateRequest{CsrPem: csr})
	if err != nil {
		t.Fatalf("RenewCertificate: %v", err)
	}
	keyPEM, _ := pki.EncodePrivateKeyPEM(key)
	pair, err := tls.X509KeyPair(resp.CertificatePem, keyPEM)
	if err != nil {
		t.Fatalf("renewed certificate: %v", err)
	}
	return pair, resp.CaPem
}

// dialWith is a Clusters client presenting cert (if any) and trusting roots.
func (h *hubProc) dialWith(t *testing.T, roots *x509.CertPool, cert *tls.Certificate) shoalv1.ClustersClient {
	t.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return h.dial(t, credentials.NewTLS(cfg))
}

func poolPEM(t *testing.T, pemData []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemData) {
		t.Fatal("no PEM certificate")
	}
	return p
}

func leafOf(c tls.Certificate) *x509.Certificate {
	l, _ := x509.ParseCertificate(c.Certificate[0])
	return l
}

func clusterSerial(t *testing.T, ctx context.Context, admin shoalv1.ClustersClient, name string) string {
	t.Helper()
	return getCluster(t, ctx, admin, name).Annotations[v1alpha1.AnnotationCertificateSerial]
}

// TestAgentCertificateRenewal: an agent whose certificate nears its expiry
// (the hub issues 1-minute certificates) renews it over its mTLS session;
// the old certificate keeps working until the new one is first used and is
// refused from then on — on its open connection and on a new one. Only an
// agent may renew, and only its own cluster's certificate.
func TestAgentCertificateRenewal(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h := startHub(t, "--agent-cert-validity", "1m", "--audit-log", auditPath)
	ctx := testCtx(t)
	admin := h.admin(t)
	a, err := register(t, ctx, h, createToken(t, ctx, admin, 600, 1).Token, "renew1", "uid-renew1")
	if err != nil {
		t.Fatal(err)
	}
	old := leafOf(a.cert)
	if left := time.Until(old.NotAfter); left > 61*time.Second {
		t.Fatalf("--agent-cert-validity 1m gave a certificate valid %v more", left)
	}
	_, err = admin.RenewCertificate(ctx, &shoalv1.RenewCertificateRequest{})
	wantCode(t, err, codes.PermissionDenied, "admin calling RenewCertificate")
	_, err = h.anonymous(t).RenewCertificate(ctx, &shoalv1.RenewCertificateRequest{})
	wantCode(t, err, codes.Unauthenticated, "RenewCertificate without a certificate")

	next, bundle := a.renew(t, ctx)
	nl := leafOf(next)
	if nl.Subject.CommonName != pki.AgentCommonName("renew1") || nl.NotAfter.Before(old.NotAfter) || nl.SerialNumber.Cmp(old.SerialNumber) == 0 || time.Until(nl.NotAfter) > 61*time.Second {
		t.Fatalf("renewed certificate CN %q until %v (old until %v)", nl.Subject.CommonName, nl.NotAfter, old.NotAfter)
	}
	if _, err := a.cl.Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true}); err != nil {
		t.Fatalf("old certificate before the renewed one was used: %v", err)
	}
	renewed := h.dialWith(t, poolPEM(t, bundle), &next)
	if _, err := renewed.Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true}); err != nil {
		t.Fatalf("heartbeat with the renewed certificate: %v", err)
	}
	if s := clusterSerial(t, ctx, admin, "renew1"); s != pki.SerialString(nl) {
		t.Fatalf("cluster's current serial %s, want the renewed %s", s, pki.SerialString(nl))
	}
	_, err = a.cl.Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true})
	wantCode(t, err, codes.PermissionDenied, "old certificate on its open connection after the renewed one was used")
	_, err = h.dialWith(t, poolPEM(t, bundle), &a.cert).ReportInventory(ctx, &shoalv1.ReportInventoryRequest{Generation: 2, InventoryJson: []byte(`{}`)})
	wantCode(t, err, codes.PermissionDenied, "old certificate on a new connection")
	_, err = a.cl.RenewCertificate(ctx, &shoalv1.RenewCertificateRequest{})
	wantCode(t, err, codes.PermissionDenied, "renewal with the revoked certificate")

	// The CSR names the cluster only as the certificate does.
	key, _ := pki.NewKey()
	other, _ := pki.NewCSR(key, pki.AgentCommonName("someone-else"))
	_, err = renewed.RenewCertificate(ctx, &shoalv1.RenewCertificateRequest{CsrPem: other})
	wantCode(t, err, codes.InvalidArgument, "renewal asking for another cluster's identity")
	_, err = renewed.IssueHubCredentials(ctx, &shoalv1.IssueHubCredentialsRequest{})
	wantCode(t, err, codes.NotFound, "hub-cluster credentials from a hub without --kubeconfig")

	// The credential calls are audited, refused ones too; heartbeats not.
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct{ User, Method, Code string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		count[e.User+" "+e.Method+" "+e.Code]++
	}
	for _, want := range []string{"agent:renew1 Clusters/RenewCertificate OK", "agent:renew1 Clusters/RenewCertificate PermissionDenied",
		"agent:renew1 Clusters/RenewCertificate InvalidArgument", "agent:renew1 Clusters/IssueHubCredentials NotFound"} {
		if count[want] != 1 {
			t.Errorf("audit log has %d entries %q, want 1:\n%s", count[want], want, raw)
		}
	}
	for k := range count {
		if strings.Contains(k, "Heartbeat") {
			t.Errorf("a heartbeat in the audit log: %s", k)
		}
	}
}

// rotateCA runs shoal-hub rotate-ca on h's data directory.
func (h *hubProc) rotateCA(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "shoal-hub"), append([]string{"rotate-ca", "--data-dir", h.dataDir,
		"--admin-config", h.configPath, "--listen", h.addr}, args...)...).CombinedOutput()
	return string(out), err
}

// TestCARotation: `shoal-hub rotate-ca` then a restart: during the overlap
// an agent with a certificate of the old CA (trusting only the old CA) keeps
// working, is told to renew and renews onto the new CA with the bundle of
// both; the admin identity of before the rotation still works; join tokens
// pin either CA. When the overlap ends — without a restart — certificates
// of the old CA are refused and the hub serves a certificate of the new CA.
func TestCARotation(t *testing.T) {
	h := startHub(t)
	ctx := testCtx(t)
	admin := h.admin(t)
	oldCA, err := pki.ParseCertificatePEM([]byte(h.adminContext().CAData))
	if err != nil {
		t.Fatal(err)
	}
	oldRoots := x509.NewCertPool()
	oldRoots.AddCert(oldCA)
	tok := createToken(t, ctx, admin, 600, 2)
	p, err := register(t, ctx, h, tok.Token, "rot-p", "uid-rot-p")
	if err != nil {
		t.Fatal(err)
	}
	q, err := register(t, ctx, h, tok.Token, "rot-q", "uid-rot-q")
	if err != nil {
		t.Fatal(err)
	}
	oldAdmin, err := os.ReadFile(h.configPath)
	if err != nil {
		t.Fatal(err)
	}
	oldAdminPath := filepath.Join(t.TempDir(), "old-admin")
	if err := os.WriteFile(oldAdminPath, oldAdmin, 0o600); err != nil {
		t.Fatal(err)
	}

	const overlap = 20 * time.Second
	rotated := time.Now()
	if out, err := h.rotateCA(t, "--overlap", overlap.String()); err != nil || !strings.Contains(out, "trusted until") {
		t.Fatalf("rotate-ca: %v\n%s", err, out)
	}
	if out, err := h.rotateCA(t, "--overlap", overlap.String()); err == nil || !strings.Contains(out, "rotation is in progress") {
		t.Fatalf("a second rotate-ca during the overlap: %v\n%s", err, out)
	}
	h.restart()
	ctx = testCtx(t)
	newCA, err := pki.ParseCertificatePEM([]byte(h.adminContext().CAData))
	if err != nil || newCA.Equal(oldCA) {
		t.Fatalf("admin config after rotate-ca names CA %v (%v), want the new one first", newCA.Subject, err)
	}

	// During the overlap.
	pOld := h.dialWith(t, oldRoots, &p.cert)
	beat, err := pOld.Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true})
	if err != nil {
		t.Fatalf("agent with an old-CA certificate, trusting only the old CA, during the overlap: %v", err)
	}
	if !beat.RenewCertificate {
		t.Fatal("the hub did not tell an agent of the old CA to renew")
	}
	p.cl = pOld
	next, bundle := p.renew(t, ctx)
	if err := leafOf(next).CheckSignatureFrom(newCA); err != nil {
		t.Fatalf("renewed certificate not issued by the new CA: %v", err)
	}
	if n := strings.Count(string(bundle), "BEGIN CERTIFICATE"); n != 2 {
		t.Fatalf("renewal bundle during the overlap holds %d certificates, want the new and the old CA", n)
	}
	pNew := h.dialWith(t, poolPEM(t, bundle), &next)
	if beat, err := pNew.Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true}); err != nil || beat.RenewCertificate {
		t.Fatalf("heartbeat with the new-CA certificate: %v (renew %v)", err, beat.GetRenewCertificate())
	}
	if _, err := h.oldAdmin(t, oldAdminPath).ListClusters(ctx, &shoalv1.ListClustersRequest{}); err != nil {
		t.Fatalf("admin identity of the old CA during the overlap: %v", err)
	}
	tok2 := createToken(t, ctx, h.admin(t), 600, 1)
	if hashes := strings.Split(tok2.CaHash, ","); len(hashes) != 2 || hashes[0] != cahash.Of(newCA) || hashes[1] != cahash.Of(oldCA) ||
		!strings.Contains(tok2.AgentCommand, "--ca-hash "+tok2.CaHash) {
		t.Fatalf("join token during the overlap pins %q (command %q), want the new and the old CA's hashes", tok2.CaHash, tok2.AgentCommand)
	}
	if _, err := register(t, ctx, h, tok2.Token, "rot-r", "uid-rot-r"); err != nil {
		t.Fatalf("registration during the overlap: %v", err)
	}

	// The overlap ends; the hub is not restarted.
	time.Sleep(time.Until(rotated.Add(overlap + time.Second))) // a known deadline, not a condition
	ctx = testCtx(t)
	_, err = h.dialWith(t, poolPEM(t, bundle), &q.cert).Heartbeat(ctx, &shoalv1.HeartbeatRequest{})
	wantCode(t, err, codes.Unauthenticated, "agent certificate of the old CA after the overlap")
	if _, err := h.oldAdmin(t, oldAdminPath).ListClusters(ctx, &shoalv1.ListClustersRequest{}); err == nil {
		t.Fatal("admin identity of the old CA accepted after the overlap")
	}
	newRoots := x509.NewCertPool()
	newRoots.AddCert(newCA)
	if _, err := h.dialWith(t, newRoots, &next).Heartbeat(ctx, &shoalv1.HeartbeatRequest{ClusterReachable: true}); err != nil {
		t.Fatalf("renewed agent, trusting only the new CA, after the overlap: %v", err)
	}
	_, err = h.dialWith(t, oldRoots, &next).Heartbeat(ctx, &shoalv1.HeartbeatRequest{})
	wantCode(t, err, codes.Unavailable, "client trusting only the old CA after the overlap (the hub serves the new CA's certificate)")
	if _, err := h.admin(t).ListClusters(ctx, &shoalv1.ListClustersRequest{}); err != nil {
		t.Fatalf("admin identity of the new CA after the overlap: %v", err)
	}
	var rec struct {
		Until time.Time `json:"until"`
	}
	raw, _ := os.ReadFile(filepath.Join(h.dataDir, "pki", "rotation.json"))
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Until.After(rotated.Add(overlap+5*time.Second)) {
		t.Fatalf("rotation record %s: %v", raw, err)
	}
	if out, err := h.rotateCA(t, "--finish"); err != nil {
		t.Fatalf("rotate-ca --finish: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(h.dataDir, "pki", "previous-ca.key")); !os.IsNotExist(err) {
		t.Fatalf("the previous CA key is still there after --finish: %v", err)
	}
	h.restart()
	if _, err := h.dialWith(t, newRoots, &next).Heartbeat(testCtx(t), &shoalv1.HeartbeatRequest{ClusterReachable: true}); err != nil {
		t.Fatalf("renewed agent after the rotation finished and a restart: %v", err)
	}
}

// oldAdmin dials h with the identity in the admin config file at path.
func (h *hubProc) oldAdmin(t *testing.T, path string) shoalv1.ClustersClient {
	t.Helper()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return h.dial(t, credentials.NewTLS(tlsCfg))
}
