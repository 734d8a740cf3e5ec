// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// maxTokenTTL bounds join tokens: they are meant to be short-lived.
const maxTokenTTL = 30 * 24 * time.Hour

// clustersServer serves the Clusters service from the registry.
type clustersServer struct {
	shoalv1.UnimplementedClustersServer
	reg *registry.Registry
	// register rate-limits Register per source IP.
	register *sourceLimiter
	// checkpoints records the checkpoints agents pass on; nil: none.
	checkpoints CheckpointRecorder
	// services records the load agents report; nil: none.
	services InferenceServices
}

func newClustersServer(reg *registry.Registry, register *sourceLimiter, cps CheckpointRecorder, svcs InferenceServices) *clustersServer {
	return &clustersServer{reg: reg, register: register, checkpoints: cps, services: svcs}
}

// object encodes v as an Object at revision rev.
func object(v any, rev int64) (*shoalv1.Object, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &shoalv1.Object{Json: b, Revision: rev}, nil
}

func (s *clustersServer) CreateJoinToken(ctx context.Context, req *shoalv1.CreateJoinTokenRequest) (*shoalv1.CreateJoinTokenResponse, error) {
	ttl, err := tokenTTL(req.TtlSeconds)
	if err != nil {
		return nil, err
	}
	token, rec, err := s.reg.CreateToken(ctx, registry.TokenOptions{TTL: ttl, Usages: req.Usages, Description: req.Description})
	if err != nil {
		return nil, err
	}
	rev, _ := strconv.ParseInt(rec.ResourceVersion, 10, 64)
	obj, err := object(rec, rev)
	if err != nil {
		return nil, err
	}
	hash := strings.Join(s.reg.CA().Hashes(), ",")
	return &shoalv1.CreateJoinTokenResponse{
		Token:        token,
		CaHash:       hash,
		AgentCommand: AgentCommand(s.reg.HubAddress(), token, hash),
		JoinToken:    obj,
	}, nil
}

// AgentCommand is the command that registers a workload cluster's agent.
// The token goes in the agent's environment, not on its command line,
// where every local user would read it in the process table.
func AgentCommand(hub, token, caHash string) string {
	return fmt.Sprintf("%s=%s shoal-agent --hub %s --ca-hash %s --cluster-name NAME", v1alpha1.EnvJoinToken, token, hub, caHash)
}

func (s *clustersServer) ListJoinTokens(ctx context.Context, _ *shoalv1.ListJoinTokensRequest) (*shoalv1.ListJoinTokensResponse, error) {
	toks, err := s.reg.ListTokens(ctx)
	if err != nil {
		return nil, err
	}
	resp := &shoalv1.ListJoinTokensResponse{}
	for _, t := range toks {
		rev, _ := strconv.ParseInt(t.ResourceVersion, 10, 64)
		obj, err := object(t, rev)
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, obj)
	}
	return resp, nil
}

func (s *clustersServer) RevokeJoinToken(ctx context.Context, req *shoalv1.RevokeJoinTokenRequest) (*shoalv1.RevokeJoinTokenResponse, error) {
	return &shoalv1.RevokeJoinTokenResponse{}, s.reg.RevokeToken(ctx, strings.TrimSpace(req.Id))
}

func (s *clustersServer) GetCluster(ctx context.Context, req *shoalv1.GetClusterRequest) (*shoalv1.Object, error) {
	cl, rev, err := s.reg.GetCluster(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(cl, rev)
}

func (s *clustersServer) GetInventory(ctx context.Context, req *shoalv1.GetClusterRequest) (*shoalv1.Object, error) {
	rec, rev, err := s.reg.GetInventory(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return &shoalv1.Object{Json: rec.Inventory, Revision: rev}, nil
}

func (s *clustersServer) ListClusters(ctx context.Context, req *shoalv1.ListClustersRequest) (*shoalv1.ListClustersResponse, error) {
	var opts store.ListOptions
	if o := req.Options; o != nil {
		opts = store.ListOptions{Limit: o.Limit, Continue: o.Continue}
	}
	list, err := s.reg.ListClusters(ctx, opts, req.Selector)
	if err != nil {
		return nil, err
	}
	resp := &shoalv1.ListClustersResponse{Meta: &shoalv1.ListMeta{Continue: list.Continue, Revision: list.Revision}}
	for i, cl := range list.Items {
		obj, err := object(cl, list.Revs[i])
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, obj)
	}
	return resp, nil
}

func (s *clustersServer) CordonCluster(ctx context.Context, req *shoalv1.CordonClusterRequest) (*shoalv1.Object, error) {
	cl, rev, err := s.reg.Cordon(ctx, req.Name, req.Cordon)
	if err != nil {
		return nil, err
	}
	return object(cl, rev)
}

func (s *clustersServer) DrainCluster(ctx context.Context, req *shoalv1.DrainClusterRequest) (*shoalv1.Object, error) {
	cl, rev, err := s.reg.Drain(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(cl, rev)
}

func (s *clustersServer) DrainNode(ctx context.Context, req *shoalv1.DrainNodeRequest) (*shoalv1.Object, error) {
	cl, rev, err := s.reg.DrainNode(ctx, req.Cluster, req.Node, req.Drain)
	if err != nil {
		return nil, err
	}
	return object(cl, rev)
}

func (s *clustersServer) RemoveCluster(ctx context.Context, req *shoalv1.RemoveClusterRequest) (*shoalv1.RemoveClusterResponse, error) {
	return &shoalv1.RemoveClusterResponse{}, s.reg.Remove(ctx, req.Name)
}

func (s *clustersServer) Register(ctx context.Context, req *shoalv1.RegisterRequest) (*shoalv1.RegisterResponse, error) {
	if err := s.register.admit(ctx); err != nil {
		return nil, err
	}
	reg, err := s.reg.Register(ctx, registry.RegisterRequest{
		Token: req.Token, ClusterName: req.ClusterName, ClusterUID: req.ClusterUid,
		CSRPEM: req.CsrPem, AgentVersion: req.AgentVersion, Labels: req.Labels,
	})
	if err != nil {
		return nil, err
	}
	obj, err := object(reg.Cluster, 0)
	if err != nil {
		return nil, err
	}
	return &shoalv1.RegisterResponse{CertificatePem: reg.CertificatePEM, CaPem: reg.CAPEM, HubKubeconfig: reg.HubKubeconfig, Cluster: obj,
		FenceTimeoutSeconds: fenceSeconds(s.reg.FenceTimeout())}, nil
}

// agentIdentity is the calling agent's identity (the auth interceptor checked it).
func agentIdentity(ctx context.Context) (pki.Identity, error) {
	id, ok := IdentityFrom(ctx)
	if !ok || id.Role != pki.RoleAgent {
		return pki.Identity{}, status.Error(codes.PermissionDenied, "agent identity required")
	}
	return id, nil
}

func (s *clustersServer) Heartbeat(ctx context.Context, req *shoalv1.HeartbeatRequest) (*shoalv1.HeartbeatResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.reg.Heartbeat(ctx, id.Cluster, id.Serial, registry.Beat{AgentVersion: req.AgentVersion,
		ClusterReachable: req.ClusterReachable, Message: req.Message, HubClusterReachable: req.HubClusterReachable}); err != nil {
		return nil, err
	}
	return &shoalv1.HeartbeatResponse{IntervalSeconds: int64(s.reg.HeartbeatInterval().Seconds()),
		FenceTimeoutSeconds: fenceSeconds(s.reg.FenceTimeout()),
		RenewCertificate:    mustRenew(ctx, s.reg.CA())}, nil
}

// fenceSeconds is the hub's fence timeout in whole seconds, rounded down
// (an agent told less fences sooner, which is safe), at least 1.
func fenceSeconds(d time.Duration) int64 { return max(1, int64(d/time.Second)) }

func (s *clustersServer) ReportInventory(ctx context.Context, req *shoalv1.ReportInventoryRequest) (*shoalv1.ReportInventoryResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	gen, err := s.reg.ReportInventory(ctx, id.Cluster, id.Serial, req.SessionId, req.Generation, req.InventoryJson)
	if err != nil {
		return nil, err
	}
	return &shoalv1.ReportInventoryResponse{AcceptedGeneration: gen}, nil
}
