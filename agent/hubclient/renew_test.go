// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/kubernetes/fake"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
)

// renewHub is a testHub that renews certificates for 3 s each and asks
// the holder of the registration certificate (serial 3) to renew, once.
type renewHub struct {
	*testHub
	serials []int64 // of the heartbeats' certificates
	next    int64
	asked   bool
	// renewed are the times of the renewals and issued the certificates.
	renewed []time.Time
	issued  []*x509.Certificate
}

func peerSerial(ctx context.Context) int64 {
	p, _ := peer.FromContext(ctx)
	ti, _ := p.AuthInfo.(credentials.TLSInfo)
	if len(ti.State.PeerCertificates) == 0 {
		return 0
	}
	return ti.State.PeerCertificates[0].SerialNumber.Int64()
}

func (h *renewHub) Heartbeat(ctx context.Context, _ *shoalv1alpha1.HeartbeatRequest) (*shoalv1alpha1.HeartbeatResponse, error) {
	s := peerSerial(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.serials = append(h.serials, s)
	ask := s == 3 && !h.asked // once: a further renewal is the timed one
	h.asked = h.asked || ask
	return &shoalv1alpha1.HeartbeatResponse{RenewCertificate: ask}, nil
}

func (h *renewHub) RenewCertificate(ctx context.Context, r *shoalv1alpha1.RenewCertificateRequest) (*shoalv1alpha1.RenewCertificateResponse, error) {
	if peerSerial(ctx) == 0 {
		return nil, status.Error(codes.Unauthenticated, "client certificate required")
	}
	block, _ := pem.Decode(r.CsrPem)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	h.mu.Lock()
	h.next++
	serial := 100 + h.next
	h.mu.Unlock()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: csr.Subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: time.Now(), NotAfter: time.Now().Add(3 * time.Second)},
		h.ca, csr.PublicKey, h.caKey)
	if err != nil {
		return nil, err
	}
	issued, _ := x509.ParseCertificate(der)
	h.mu.Lock()
	h.renewed, h.issued = append(h.renewed, time.Now()), append(h.issued, issued)
	h.mu.Unlock()
	return &shoalv1alpha1.RenewCertificateResponse{CertificatePem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), CaPem: h.caPEM}, nil
}

// TestRenewal: asked by a heartbeat, the agent renews at once; then it
// renews each 3 s certificate at two thirds of its life; every renewal is
// saved in the Secret and used by the next calls, on the same Client.
func TestRenewal(t *testing.T) {
	h2 := &renewHub{}
	_, addr := startHubServing(t, true, func(h *testHub) shoalv1alpha1.ClustersServer { h2.testHub = h; return h2 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	creds, err := Register(ctx, Registration{Address: addr, Token: "good", CAHash: cahash.Of(h2.ca), Cluster: "eu1"})
	if err != nil {
		t.Fatal(err)
	}
	store := SecretStore{Client: fake.NewClientset(), Namespace: "shoal-system"}
	if err := store.Save(ctx, creds); err != nil {
		t.Fatal(err)
	}
	keeper := NewKeeper(store, creds)
	c, err := Dial(addr, keeper.Current(), "v-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.RunRenewal(rctx, keeper) }()
	if _, err := c.Heartbeat(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for len(seen) < 3 { // the registration's, the asked-for renewal's, a timed renewal's
		if _, err := c.Heartbeat(ctx, true, ""); err != nil {
			t.Fatalf("heartbeat during renewals: %v", err)
		}
		h2.mu.Lock()
		for _, s := range h2.serials {
			seen[s] = true
		}
		h2.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("certificates used: %v, want the registration's and two renewals'", seen)
		case <-time.After(100 * time.Millisecond):
		}
	}
	h2.mu.Lock()
	if due := renewAt(h2.issued[0].NotBefore, h2.issued[0].NotAfter); h2.renewed[1].Before(due) {
		t.Fatalf("second renewal at %v, before two thirds of the first renewed certificate's life (%v)", h2.renewed[1], due)
	}
	h2.mu.Unlock()
	rcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stored, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := leaf(stored.CertPEM)
	if cur, _ := leaf(keeper.Current().CertPEM); cert.SerialNumber.Cmp(cur.SerialNumber) != 0 || cert.SerialNumber.Int64() < 101 {
		t.Fatalf("stored certificate serial %v, current %v: the Secret does not hold the renewed certificate", cert.SerialNumber, cur.SerialNumber)
	}
	if _, err := stored.TLSConfig("localhost"); err != nil {
		t.Fatalf("stored key and certificate do not match: %v", err)
	}
	if string(stored.HubKubeconfig) != "kubeconfig" {
		t.Fatal("the renewal lost the hub kubeconfig")
	}
}

func TestRenewAt(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := renewAt(nb, nb.Add(300*24*time.Hour)); !got.Equal(nb.Add(200 * 24 * time.Hour)) {
		t.Fatalf("renewAt = %v, want two thirds in", got)
	}
}

// TestCheckCABundle: the registration's trust bundle must hold a pinned CA,
// in any position (during a hub CA rotation it holds the new and the old).
func TestCheckCABundle(t *testing.T) {
	a, _ := startHub(t, true)
	b, _ := startHub(t, true)
	bundle := append(append([]byte{}, a.caPEM...), b.caPEM...)
	for _, tc := range []struct {
		name, pin string
		ok        bool
	}{
		{"first", cahash.Of(a.ca), true},
		{"second", cahash.Of(b.ca), true},
		{"either of two pins", "sha256:00," + cahash.Of(b.ca), true},
		{"none", "sha256:00", false},
	} {
		if err := checkCA(bundle, tc.pin); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if err := checkCA(nil, cahash.Of(a.ca)); err == nil {
		t.Error("an empty bundle passed")
	}
}
