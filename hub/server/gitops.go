// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// gitopsClustersServer is the Clusters service with ReportGitOpsStatus
// served from the registry.
type gitopsClustersServer struct {
	*clustersServer
	reg *registry.Registry
}

// clustersService is the Clusters service; with gitops agents' GitOps
// reports are stored and answered with the source to sync.
func clustersService(reg *registry.Registry, gitops bool, register *sourceLimiter, cps CheckpointRecorder, svcs InferenceServices) shoalv1.ClustersServer {
	cs := newClustersServer(reg, register, cps, svcs)
	if !gitops {
		return cs
	}
	return &gitopsClustersServer{clustersServer: cs, reg: reg}
}

// ReportGitOpsStatus stores the calling agent's GitOps status on its cluster
// and answers with the source it must sync (a rollout's pinned commit, if
// any); an empty answer means no source is set.
func (s *gitopsClustersServer) ReportGitOpsStatus(ctx context.Context, req *shoalv1.ReportGitOpsStatusRequest) (*shoalv1.ReportGitOpsStatusResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	var st v1alpha1.GitOpsStatus
	if err := json.Unmarshal(req.StatusJson, &st); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "GitOps status: %v", err)
	}
	src, err := s.reg.ReportGitOpsStatus(ctx, id.Cluster, st)
	if err != nil {
		return nil, err
	}
	resp := &shoalv1.ReportGitOpsStatusResponse{}
	if src != nil {
		if resp.SourceJson, err = json.Marshal(src); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// gitopsServer serves the GitOps service (admin) from the registry, the
// owner of the cluster records.
type gitopsServer struct {
	shoalv1.UnimplementedGitOpsServer
	reg *registry.Registry
}

// GitOpsService registers the GitOps service over reg.
func GitOpsService(reg *registry.Registry) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterGitOpsServer(r, &gitopsServer{reg: reg}) }
}

func (s *gitopsServer) SetSource(ctx context.Context, req *shoalv1.SetGitOpsSourceRequest) (*shoalv1.Object, error) {
	var src *v1alpha1.GitOpsSource
	if len(req.SourceJson) > 0 {
		src = &v1alpha1.GitOpsSource{}
		dec := json.NewDecoder(bytesReader(req.SourceJson))
		dec.DisallowUnknownFields() // a "password" or "token" field is refused, not dropped silently
		if err := dec.Decode(src); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "GitOps source: %v", err)
		}
	}
	cl, rev, err := s.reg.SetGitOpsSource(ctx, req.Cluster, src)
	if err != nil {
		return nil, err
	}
	return object(cl, rev)
}

func (s *gitopsServer) ListStatus(ctx context.Context, req *shoalv1.ListGitOpsStatusRequest) (*shoalv1.ListGitOpsStatusResponse, error) {
	cls, err := s.reg.ListClusters(ctx, store.ListOptions{}, req.Selector)
	if err != nil {
		return nil, err
	}
	resp := &shoalv1.ListGitOpsStatusResponse{}
	for _, cl := range cls.Items {
		obj, err := object(cl, 0)
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, obj)
	}
	return resp, nil
}
