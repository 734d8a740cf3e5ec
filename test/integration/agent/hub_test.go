// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/hub/pki"
)

// fakeHub is the Clusters API as an agent sees it: Register signs the CSR
// with a real CA and issues scoped credentials on the hub cluster; the agent
// calls require the client certificate.
type fakeHub struct {
	shoalv1alpha1.UnimplementedClustersServer
	ca     *pki.CA
	issuer *hubcluster.Issuer
	token  string
	addr   string

	mu            sync.Mutex
	registered    []*shoalv1alpha1.RegisterRequest
	beats         map[string]time.Time
	inventory     map[string]fedinv.Cluster
	gitopsReports int
	// reported, when set, receives every accepted inventory (dropped when full).
	reported chan fedinv.Cluster
}

func startFakeHub(dir string, issuer *hubcluster.Issuer) (*fakeHub, func(), error) {
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		return nil, nil, err
	}
	serving, err := ca.ServerCertificate(nil)
	if err != nil {
		return nil, nil, err
	}
	// The serving chain carries the CA so that agents can pin its hash.
	serving.Certificate = append(serving.Certificate, ca.Cert.Raw)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	h := &fakeHub{ca: ca, issuer: issuer, token: "join-token", addr: lis.Addr().String(),
		beats: map[string]time.Time{}, inventory: map[string]fedinv.Cluster{}}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(ca.ServerTLSConfig(serving))))
	shoalv1alpha1.RegisterClustersServer(s, h)
	go func() { _ = s.Serve(lis) }()
	return h, s.Stop, nil
}

func (h *fakeHub) caHash() string { return cahash.Of(h.ca.Cert) }

func (h *fakeHub) Register(ctx context.Context, r *shoalv1alpha1.RegisterRequest) (*shoalv1alpha1.RegisterResponse, error) {
	if r.Token != h.token {
		return nil, status.Error(codes.Unauthenticated, "unknown join token")
	}
	_, certPEM, err := h.ca.SignAgentCSR(r.CsrPem, r.ClusterName, time.Hour)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	kc, err := h.issuer.Issue(ctx, r.ClusterName)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	h.mu.Lock()
	h.registered = append(h.registered, r)
	h.mu.Unlock()
	return &shoalv1alpha1.RegisterResponse{CertificatePem: certPEM, CaPem: h.ca.CertPEM, HubKubeconfig: kc}, nil
}

func cluster(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "no peer")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 {
		return "", status.Error(codes.Unauthenticated, "client certificate required")
	}
	id, err := pki.IdentityOf(ti.State.VerifiedChains[0][0])
	if err != nil || id.Role != pki.RoleAgent {
		return "", status.Error(codes.PermissionDenied, "not an agent")
	}
	return id.Cluster, nil
}

func (h *fakeHub) Heartbeat(ctx context.Context, _ *shoalv1alpha1.HeartbeatRequest) (*shoalv1alpha1.HeartbeatResponse, error) {
	c, err := cluster(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beats[c] = time.Now()
	return &shoalv1alpha1.HeartbeatResponse{IntervalSeconds: 1}, nil
}

func (h *fakeHub) ReportInventory(ctx context.Context, r *shoalv1alpha1.ReportInventoryRequest) (*shoalv1alpha1.ReportInventoryResponse, error) {
	c, err := cluster(ctx)
	if err != nil {
		return nil, err
	}
	var inv fedinv.Cluster
	if err := json.Unmarshal(r.InventoryJson, &inv); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inventory[c] = inv
	if h.reported != nil {
		select {
		case h.reported <- inv:
		default:
		}
	}
	return &shoalv1alpha1.ReportInventoryResponse{AcceptedGeneration: r.Generation}, nil
}

func (h *fakeHub) ReportGitOpsStatus(ctx context.Context, _ *shoalv1alpha1.ReportGitOpsStatusRequest) (*shoalv1alpha1.ReportGitOpsStatusResponse, error) {
	if _, err := cluster(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gitopsReports++
	return &shoalv1alpha1.ReportGitOpsStatusResponse{}, nil
}

func (h *fakeHub) latest(c string) (fedinv.Cluster, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	inv, ok := h.inventory[c]
	return inv, ok
}

func (h *fakeHub) registrations() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.registered)
}
