// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/users"
)

// modelsServer serves the Models service.
type modelsServer struct {
	shoalv1.UnimplementedModelsServer
	models *models.Service
}

// RegisterModels returns the registration of the Models service, for Config.Services.
func RegisterModels(ms *models.Service) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterModelsServer(r, &modelsServer{models: ms}) }
}

// Register stores a version; the caller must be allowed to read its source job.
func (s *modelsServer) Register(ctx context.Context, req *shoalv1.RegisterModelVersionRequest) (*shoalv1.Object, error) {
	if len(req.GetVersion().GetJson()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "register needs a version: set version.json to a ModelVersion in JSON")
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m, err := v1alpha1.DecodeModelVersion(req.Version.Json)
	if err != nil {
		return nil, err
	}
	mayRead := func(j *v1alpha1.Job) error {
		if d := users.Allowed(p, users.Request{Verb: users.Get, Resource: users.Jobs, Queue: j.Spec.Queue, Owner: j.Status.Owner}); !d.Allowed {
			return errs.Of(errs.ErrPermissionDenied, "user %q may not read job %q, the version's source (%s)", p.Name, j.Name, d.Reason)
		}
		return nil
	}
	stored, rev, res, err := s.models.Register(ctx, m, p.Name, mayRead)
	if err != nil {
		return nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(v1alpha1.SubmitResultHeader, string(res))) // informative only
	return object(stored, rev)
}

func (s *modelsServer) Get(ctx context.Context, req *shoalv1.GetModelVersionRequest) (*shoalv1.Object, error) {
	m, rev, err := s.models.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(m, rev)
}

func (s *modelsServer) List(ctx context.Context, req *shoalv1.ListModelVersionsRequest) (*shoalv1.ListModelVersionsResponse, error) {
	ms, _, err := s.models.List(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListModelVersionsResponse{Items: make([]*shoalv1.Object, 0, len(ms))}
	for _, m := range ms {
		o, err := object(m, revisionOf(m.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *modelsServer) Lineage(ctx context.Context, req *shoalv1.GetModelVersionRequest) (*shoalv1.ModelLineage, error) {
	ms, err := s.models.Lineage(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ModelLineage{Versions: make([]*shoalv1.Object, 0, len(ms))}
	for _, m := range ms {
		o, err := object(m, revisionOf(m.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Versions = append(out.Versions, o)
	}
	return out, nil
}
