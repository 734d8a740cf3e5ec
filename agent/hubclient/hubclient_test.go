// SPDX-License-Identifier: Apache-2.0

package hubclient

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
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/kubernetes/fake"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
)

// testHub is a minimal Clusters server with real TLS: it signs agent CSRs
// with its CA and requires the agent certificate on the other calls.
type testHub struct {
	shoalv1alpha1.UnimplementedClustersServer
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	mu     sync.Mutex
	tokens []string
	beats  []string
	gens   []int64
}

func newCert(t *testing.T, tmpl *x509.Certificate, pub any, parent *x509.Certificate, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func startHub(t *testing.T, sendCA bool) (*testHub, string) {
	t.Helper()
	return startHubServing(t, sendCA, func(h *testHub) shoalv1alpha1.ClustersServer { return h })
}

// startHubServing starts a hub whose Clusters server is serve(h).
func startHubServing(t *testing.T, sendCA bool, serve func(*testHub) shoalv1alpha1.ClustersServer) (*testHub, string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := newCert(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)},
		&caKey.PublicKey, nil, caKey)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := newCert(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hub"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)},
		&srvKey.PublicKey, ca, caKey)
	chain := [][]byte{srv.Raw}
	if sendCA {
		chain = append(chain, ca.Raw)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{{Certificate: chain, PrivateKey: srvKey}},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	h := &testHub{ca: ca, caKey: caKey, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsCfg)))
	shoalv1alpha1.RegisterClustersServer(s, serve(h))
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return h, "localhost:" + portOf(lis.Addr())
}

func portOf(a net.Addr) string { _, p, _ := net.SplitHostPort(a.String()); return p }

func (h *testHub) Register(_ context.Context, r *shoalv1alpha1.RegisterRequest) (*shoalv1alpha1.RegisterResponse, error) {
	h.mu.Lock()
	h.tokens = append(h.tokens, r.Token)
	h.mu.Unlock()
	if r.Token != "good" {
		return nil, status.Error(codes.Unauthenticated, "bad token")
	}
	block, _ := pem.Decode(r.CsrPem)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cert, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: csr.Subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)},
		h.ca, csr.PublicKey, h.caKey)
	if err != nil {
		return nil, err
	}
	return &shoalv1alpha1.RegisterResponse{CertificatePem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}),
		CaPem: h.caPEM, HubKubeconfig: []byte("kubeconfig"), FenceTimeoutSeconds: 120}, nil
}

func agentCN(ctx context.Context) (string, error) {
	p, _ := peer.FromContext(ctx)
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return "", status.Error(codes.Unauthenticated, "client certificate required")
	}
	return ti.State.PeerCertificates[0].Subject.CommonName, nil
}

func (h *testHub) Heartbeat(ctx context.Context, _ *shoalv1alpha1.HeartbeatRequest) (*shoalv1alpha1.HeartbeatResponse, error) {
	cn, err := agentCN(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beats = append(h.beats, cn)
	return &shoalv1alpha1.HeartbeatResponse{FenceTimeoutSeconds: 120}, nil
}

func (h *testHub) ReportInventory(ctx context.Context, r *shoalv1alpha1.ReportInventoryRequest) (*shoalv1alpha1.ReportInventoryResponse, error) {
	if _, err := agentCN(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gens = append(h.gens, r.Generation)
	return &shoalv1alpha1.ReportInventoryResponse{AcceptedGeneration: r.Generation}, nil
}

func TestRegisterPinsCA(t *testing.T) {
	h, addr := startHub(t, true)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	good := cahash.Of(h.ca)
	tests := []struct {
		name, token, hash string
		wantErr           error
		wantSent          bool
	}{
		{"pinned", "good", good, nil, true},
		{"one of several pins (a CA rotation)", "good", "sha256:00, " + strings.ToUpper(good), nil, true},
		{"wrong hash never sends the token", "good", "sha256:00", ErrCAHashMismatch, false},
		{"bad token", "bad", good, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.mu.Lock()
			h.tokens = nil
			h.mu.Unlock()
			creds, err := Register(ctx, Registration{Address: addr, Token: tt.token, CAHash: tt.hash, Cluster: "eu1"})
			h.mu.Lock()
			sent := len(h.tokens) > 0
			h.mu.Unlock()
			if sent != tt.wantSent {
				t.Errorf("token sent = %v, want %v", sent, tt.wantSent)
			}
			switch {
			case tt.token == "bad":
				if status.Code(errors.Unwrap(err)) != codes.Unauthenticated {
					t.Errorf("err = %v, want Unauthenticated", err)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || Retryable(err) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if creds.Cluster != "eu1" || len(creds.KeyPEM) == 0 || string(creds.HubKubeconfig) != "kubeconfig" {
					t.Errorf("creds = %+v", creds)
				}
			}
		})
	}
}

func TestRegisterNeedsCAInChain(t *testing.T) {
	h, addr := startHub(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := Register(ctx, Registration{Address: addr, Token: "good", CAHash: cahash.Of(h.ca), Cluster: "eu1"})
	if !errors.Is(err, ErrCAHashMismatch) {
		t.Fatalf("err = %v, want ErrCAHashMismatch", err)
	}
	if len(h.tokens) != 0 {
		t.Error("token sent to an unverified server")
	}
}

func TestMutualTLSCallsAndStore(t *testing.T) {
	h, addr := startHub(t, true)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	creds, err := Register(ctx, Registration{Address: addr, Token: "good", CAHash: cahash.Of(h.ca), Cluster: "eu1"})
	if err != nil {
		t.Fatal(err)
	}
	store := SecretStore{Client: fake.NewClientset(), Namespace: "shoal-system"}
	if _, err := store.Load(ctx); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("load before save: %v", err)
	}
	if err := store.Save(ctx, creds); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, creds); err != nil {
		t.Fatalf("save twice: %v", err)
	}
	back, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(addr, back, "v-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if creds.HubFenceTimeout != 2*time.Minute || back.HubFenceTimeout != 2*time.Minute {
		t.Fatalf("the hub's fence timeout from registration %s, stored and loaded %s; want 2m", creds.HubFenceTimeout, back.HubFenceTimeout)
	}
	var contacts []time.Time
	var fences []time.Duration
	c.OnContact(func(sent time.Time) { contacts = append(contacts, sent) })
	c.OnHubFenceTimeout(func(d time.Duration) { fences = append(fences, d) })
	// A heartbeat while the hub cluster is out of reach is no contact.
	hubCluster := false
	c.OnHubCluster(func(time.Time) bool { return hubCluster })
	if _, err := c.Heartbeat(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if len(contacts) != 0 {
		t.Fatalf("contacts after a heartbeat without the hub cluster = %v, want none", contacts)
	}
	hubCluster = true
	before := time.Now()
	if _, err := c.Heartbeat(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if len(contacts) != 1 || contacts[0].Before(before) || contacts[0].After(time.Now()) {
		t.Fatalf("contacts after one heartbeat = %v, want one at its start", contacts)
	}
	if len(fences) != 2 || fences[0] != 2*time.Minute || fences[1] != 2*time.Minute {
		t.Fatalf("the hub's fence timeout from the heartbeat replies: %v, want [2m 2m]", fences)
	}
	keeper := NewKeeper(store, back)
	if _, err := keeper.Update(ctx, func(c *Credentials) { c.HubFenceTimeout = 90 * time.Second }); err != nil {
		t.Fatal(err)
	}
	if again, err := store.Load(ctx); err != nil || again.HubFenceTimeout != 90*time.Second || string(again.HubKubeconfig) != "kubeconfig" {
		t.Fatalf("after recording 90s through the keeper: %+v, %v; want 90s and the rest kept", again, err)
	}
	reports := make(chan Report, 1)
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.RunReports(rctx, reports) }()
	reports <- Report{Generation: 7, JSON: []byte(`{}`)}
	for {
		h.mu.Lock()
		n := len(h.gens)
		h.mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("report never arrived")
		case <-time.After(20 * time.Millisecond):
		}
	}
	rcancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if len(contacts) != 1 {
		t.Errorf("an inventory report counted as a contact: %v", contacts)
	}
	if h.beats[0] != "shoal:agent:eu1" || h.gens[0] != 7 {
		t.Errorf("beats=%v gens=%v", h.beats, h.gens)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for i, maxWant := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		d := b.Next()
		if d < maxWant*time.Millisecond/2 || d > maxWant*time.Millisecond {
			t.Errorf("attempt %d: %v not in [%v, %v]", i, d, maxWant*time.Millisecond/2, maxWant*time.Millisecond)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Errorf("after reset: %v", d)
	}
}

// registered registers cluster eu1 with the hub h at addr and dials it
// with the credentials it got; the client closes with the test.
func registered(ctx context.Context, t *testing.T, h *testHub, addr string) *Client {
	t.Helper()
	creds, err := Register(ctx, Registration{Address: addr, Token: "good", CAHash: cahash.Of(h.ca), Cluster: "eu1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(addr, creds, "v-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
