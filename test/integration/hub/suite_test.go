// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
)

func wantCode(t *testing.T, err error, want codes.Code, what string) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %s (%v), want %s", what, got, err, want)
	}
}

// testTransportSecurity: plaintext, TLS 1.2, no certificate and a
// certificate from another CA are all refused.
func testTransportSecurity(t *testing.T, h *hubProc) {
	ctx := testCtx(t)
	_, err := h.dial(t, insecure.NewCredentials()).ListClusters(ctx, &shoalv1.ListClustersRequest{})
	wantCode(t, err, codes.Unavailable, "plaintext connection")

	c := h.adminContext()
	cfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	if conn, err := tls.Dial("tcp", h.addr, cfg); err == nil {
		_ = conn.Close()
		t.Fatal("TLS 1.2 handshake accepted, want TLS 1.3 only")
	}

	_, err = h.anonymous(t).ListClusters(ctx, &shoalv1.ListClustersRequest{})
	wantCode(t, err, codes.Unauthenticated, "admin call without a client certificate")

	other, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := other.ClientCertificate(pki.AdminCommonName, []string{pki.AdminGroup}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ = c.ClientTLSConfig()
	cfg.Certificates = []tls.Certificate{forged}
	_, err = h.dial(t, credentials.NewTLS(cfg)).ListClusters(ctx, &shoalv1.ListClustersRequest{})
	if err == nil || status.Code(err) == codes.OK {
		t.Fatal("admin certificate from another CA accepted")
	}
}

// testRegistration: token → Register → the agent certificate works for
// agent calls (only), the cluster turns Ready, and refusals are right.
func testRegistration(t *testing.T, h *hubProc, prefix string) *agent {
	ctx := testCtx(t)
	admin := h.admin(t)
	tok := createToken(t, ctx, admin, 600, 1)
	if !strings.HasPrefix(tok.AgentCommand, v1alpha1.EnvJoinToken+"="+tok.Token+" shoal-agent ") || !strings.Contains(tok.AgentCommand, "--ca-hash "+caHash(t, h)) {
		t.Fatalf("agent command %q lacks the token or CA hash", tok.AgentCommand)
	}
	a, err := register(t, ctx, h, tok.Token, prefix+"a", prefix+"uid-a")
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := a.heartbeat(ctx); err != nil {
		t.Fatalf("agent heartbeat: %v", err)
	}
	if c := getCluster(t, ctx, admin, a.name); c.Status.State != v1alpha1.ClusterReady || c.Status.Inventory.GPUs != 8 {
		t.Fatalf("cluster after heartbeat and inventory: state %s inventory %+v, want Ready with 8 GPUs", c.Status.State, c.Status.Inventory)
	}
	_, err = a.cl.ListClusters(ctx, &shoalv1.ListClustersRequest{})
	wantCode(t, err, codes.PermissionDenied, "agent calling an admin method")
	_, err = admin.Heartbeat(ctx, &shoalv1.HeartbeatRequest{})
	wantCode(t, err, codes.PermissionDenied, "admin calling an agent method")

	_, err = register(t, ctx, h, tok.Token, prefix+"b", prefix+"uid-b")
	wantCode(t, err, codes.Unauthenticated, "token reused beyond its limit")
	tok2 := createToken(t, ctx, admin, 600, 5)
	_, err = register(t, ctx, h, tok2.Token, prefix+"c", prefix+"uid-a")
	wantCode(t, err, codes.AlreadyExists, "same cluster UID twice")
	_, err = register(t, ctx, h, tok2.Token, prefix+"a", prefix+"uid-z")
	wantCode(t, err, codes.AlreadyExists, "taken cluster name")
	_, err = register(t, ctx, h, "abcdef.0123456789abcdef", prefix+"d", prefix+"uid-d")
	wantCode(t, err, codes.Unauthenticated, "unknown token")

	revoked := createToken(t, ctx, admin, 600, 1)
	if _, err := admin.RevokeJoinToken(ctx, &shoalv1.RevokeJoinTokenRequest{Id: strings.Split(revoked.Token, ".")[0]}); err != nil {
		t.Fatal(err)
	}
	_, err = register(t, ctx, h, revoked.Token, prefix+"e", prefix+"uid-e")
	wantCode(t, err, codes.Unauthenticated, "revoked token")

	expiring := createToken(t, ctx, admin, 1, 1)
	var jt v1alpha1.JoinToken
	if err := jsonUnmarshal(expiring.JoinToken.Json, &jt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(jt.Spec.Expires.Time) + 100*time.Millisecond) // wait out a known expiry, not a condition
	_, err = register(t, ctx, h, expiring.Token, prefix+"f", prefix+"uid-f")
	wantCode(t, err, codes.Unauthenticated, "expired token")
	return a
}

// testConcurrentRegistrations: 8 agents race for a 3-use token.
func testConcurrentRegistrations(t *testing.T, h *hubProc, prefix string) {
	ctx := testCtx(t)
	tok := createToken(t, ctx, h.admin(t), 600, 3)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := register(t, ctx, h, tok.Token, fmt.Sprintf("%sr%d", prefix, i), fmt.Sprintf("%sruid-%d", prefix, i))
			switch status.Code(err) {
			case codes.OK:
				ok.Add(1)
			case codes.Unauthenticated:
			default:
				t.Errorf("registration %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 3 {
		t.Fatalf("%d registrations succeeded with a 3-use token", ok.Load())
	}
}

// testRemoveRevokes: after remove, the cluster's certificate is refused.
func testRemoveRevokes(t *testing.T, h *hubProc, prefix string) {
	ctx := testCtx(t)
	admin := h.admin(t)
	a, err := register(t, ctx, h, createToken(t, ctx, admin, 600, 1).Token, prefix+"rm", prefix+"uid-rm")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RemoveCluster(ctx, &shoalv1.RemoveClusterRequest{Name: a.name}); err != nil {
		t.Fatal(err)
	}
	_, err = a.cl.Heartbeat(ctx, &shoalv1.HeartbeatRequest{})
	wantCode(t, err, codes.PermissionDenied, "removed cluster's certificate")
	_, err = admin.GetCluster(ctx, &shoalv1.GetClusterRequest{Name: a.name})
	wantCode(t, err, codes.NotFound, "removed cluster")
}

// snapshot is what a restart must keep.
type snapshot struct {
	caHash   string
	clusters []string
	tokens   []string
}

func takeSnapshot(t *testing.T, h *hubProc) snapshot {
	t.Helper()
	ctx := testCtx(t)
	admin := h.admin(t)
	s := snapshot{caHash: caHash(t, h)}
	cl, err := admin.ListClusters(ctx, &shoalv1.ListClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cl.Items {
		var c v1alpha1.Cluster
		_ = jsonUnmarshal(o.Json, &c)
		s.clusters = append(s.clusters, c.Name)
	}
	toks, err := admin.ListJoinTokens(ctx, &shoalv1.ListJoinTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range toks.Items {
		var jt v1alpha1.JoinToken
		_ = jsonUnmarshal(o.Json, &jt)
		s.tokens = append(s.tokens, fmt.Sprintf("%s:%d", jt.Name, jt.Status.Uses))
	}
	return s
}

// testRestartKeepsState restarts the hub: CA, clusters, tokens and agent
// certificates survive.
func testRestartKeepsState(t *testing.T, h *hubProc, a *agent) {
	before := takeSnapshot(t, h)
	if len(before.clusters) == 0 || len(before.tokens) == 0 {
		t.Fatalf("nothing to keep: %+v", before)
	}
	h.restart()
	after := takeSnapshot(t, h)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("restart changed the hub's state:\nbefore %+v\nafter  %+v", before, after)
	}
	ctx := testCtx(t)
	a.redial(t, h) // the hub listens on a new port
	if err := a.heartbeat(ctx); err != nil {
		t.Fatalf("agent certificate after restart: %v", err)
	}
}

// testMetricsAndCLI: request metrics by method and code, and the CLI.
func testMetricsAndCLI(t *testing.T, h *hubProc) {
	m := h.metrics(t)
	for _, want := range []string{
		`shoal_hub_grpc_requests_total{code="OK",method="Clusters/Register"}`,
		`shoal_hub_grpc_requests_total{code="Unauthenticated",method="Clusters/Register"}`,
		`shoal_hub_grpc_request_duration_seconds_bucket{method="Clusters/Heartbeat"`,
		`shoal_store_request_duration_seconds`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	out, err := h.shoal(t, "cluster", "token", "create", "--ttl", "10m", "--usages", "2", "--cluster-name", "eu9")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, v1alpha1.EnvJoinToken+"=") || !strings.Contains(out, " shoal-agent --hub "+h.addr+" --ca-hash ") || !strings.Contains(out, "--ca-hash "+caHash(t, h)+" --cluster-name eu9") {
		t.Fatalf("token create output lacks the agent command:\n%s", out)
	}
	out, err = h.shoal(t, "cluster", "list", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "NVIDIA-H100-80GB-HBM3 6/8") || !strings.Contains(out, "Ready") {
		t.Fatalf("cluster list lacks a Ready cluster with 6 of 8 H100 free:\n%s", out)
	}
	out, err = h.shoal(t, "--hub", "127.0.0.1:1", "cluster", "list")
	if err == nil || !strings.Contains(out, "cannot reach hub at 127.0.0.1:1: is shoal-hub running?") {
		t.Fatalf("unreachable hub: err %v, output:\n%s", err, out)
	}
}

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode hub object: %w", err)
	}
	return nil
}

// testLiveness: a cluster whose agent stops beating turns NotReady once the
// hub's grace (5s in these tests) has passed, and Ready again on the next beat.
func testLiveness(t *testing.T, h *hubProc, prefix string) {
	ctx := testCtx(t)
	admin := h.admin(t)
	a, err := register(t, ctx, h, createToken(t, ctx, admin, 600, 1).Token, prefix+"live", prefix+"uid-live")
	if err != nil {
		t.Fatal(err)
	}
	lastBeat := time.Now() // taken before the beat: the hub's timestamp is not earlier
	if err := a.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	waitState := func(want v1alpha1.ClusterState, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			c := getCluster(t, ctx, admin, a.name)
			if c.Status.State == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster state %s after %s, want %s", c.Status.State, within, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// grace 5s + one sweep interval (grace/4) + slack for a loaded machine
	waitState(v1alpha1.ClusterNotReady, 15*time.Second)
	if silent := time.Since(lastBeat); silent < 5*time.Second {
		t.Fatalf("NotReady after %s of silence, before the 5s grace", silent)
	}
	if err := a.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(v1alpha1.ClusterReady, 5*time.Second)
}
