// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/users"
)

// InferenceServices reads the inference service a call names, for its
// authorization by queue and owner, and records the load agents report.
type InferenceServices interface {
	Get(ctx context.Context, name string) (*v1alpha1.InferenceService, int64, error)
	ReportLoad(ctx context.Context, name, source string, value int64) (*v1alpha1.InferenceService, int64, error)
}

// inferenceServer serves the Inference service.
type inferenceServer struct {
	shoalv1.UnimplementedInferenceServer
	svc *inference.Service
}

// RegisterInference returns the registration of the Inference service, for Config.Services.
func RegisterInference(svc *inference.Service) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterInferenceServer(r, &inferenceServer{svc: svc}) }
}

func decodeService(req *shoalv1.InferenceServiceRequest) (*v1alpha1.InferenceService, error) {
	if len(req.GetService().GetJson()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "set service.json to an InferenceService in JSON")
	}
	return v1alpha1.DecodeInferenceService(req.Service.Json)
}

func (s *inferenceServer) Create(ctx context.Context, req *shoalv1.InferenceServiceRequest) (*shoalv1.Object, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := decodeService(req)
	if err != nil {
		return nil, err
	}
	out, rev, err := s.svc.Create(ctx, v, p.Name)
	if err != nil {
		return nil, err
	}
	return object(out, rev)
}

func (s *inferenceServer) Update(ctx context.Context, req *shoalv1.InferenceServiceRequest) (*shoalv1.Object, error) {
	v, err := decodeService(req)
	if err != nil {
		return nil, err
	}
	if req.Name != "" && req.Name != v.Name {
		return nil, status.Errorf(codes.InvalidArgument, "the path names service %q but the object is %q", req.Name, v.Name)
	}
	out, rev, err := s.svc.Update(ctx, v, req.GetService().GetRevision())
	if err != nil {
		return nil, err
	}
	return object(out, rev)
}

func (s *inferenceServer) Get(ctx context.Context, req *shoalv1.GetInferenceServiceRequest) (*shoalv1.Object, error) {
	v, rev, err := s.svc.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(v, rev)
}

func (s *inferenceServer) List(ctx context.Context, req *shoalv1.ListInferenceServicesRequest) (*shoalv1.ListInferenceServicesResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	vs, _, err := s.svc.List(ctx, req.Queue)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListInferenceServicesResponse{Items: make([]*shoalv1.Object, 0, len(vs))}
	for _, v := range vs {
		if !users.Filter(p, users.List, users.Services, v.Spec.Queue, v.Status.Owner) {
			continue
		}
		o, err := object(v, revisionOf(v.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *inferenceServer) Delete(ctx context.Context, req *shoalv1.GetInferenceServiceRequest) (*shoalv1.Object, error) {
	v, rev, err := s.svc.Delete(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(v, rev)
}

func (s *inferenceServer) ReportLoad(ctx context.Context, req *shoalv1.ReportServiceLoadRequest) (*shoalv1.Object, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, rev, err := s.svc.ReportLoad(ctx, req.Name, "user:"+p.Name, req.Value)
	if err != nil {
		return nil, err
	}
	return object(v, rev)
}

// ReportServiceLoad records the load an agent read from the replicas of a
// service in its own cluster.
func (s *clustersServer) ReportServiceLoad(ctx context.Context, req *shoalv1.ReportServiceLoadRequest) (*shoalv1.ReportServiceLoadResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if s.services == nil {
		return nil, status.Error(codes.Unimplemented, "this hub serves no inference services")
	}
	v, _, err := s.services.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(v.Status.Endpoints, func(e v1alpha1.ServiceEndpoint) bool { return e.Cluster == id.Cluster }) {
		return nil, errs.Of(errs.ErrPermissionDenied, "inference service %q has no replica on cluster %s; an agent reports only its own cluster's load", req.Name, id.Cluster)
	}
	if _, _, err := s.services.ReportLoad(ctx, req.Name, fmt.Sprintf("agent:%s", id.Cluster), req.Value); err != nil {
		return nil, err
	}
	return &shoalv1.ReportServiceLoadResponse{}, nil
}

// serviceTarget reads the named service for its queue and owner.
func serviceTarget(ctx context.Context, a authorizer, req any) (target, error) {
	var name string
	switch r := req.(type) {
	case *shoalv1.InferenceServiceRequest: // Update: the object names it
		v, err := decodeService(r)
		if err != nil {
			return target{}, err
		}
		name = v.Name
	case named:
		name = r.GetName()
	}
	if a.services == nil {
		return target{}, status.Error(codes.Unimplemented, "this hub serves no inference services")
	}
	v, _, err := a.services.Get(ctx, name)
	if err != nil {
		return target{object: name}, err
	}
	return target{object: name, queue: v.Spec.Queue, owner: v.Status.Owner, scoped: true}, nil
}

// createServiceTarget is the queue a new service names, owned by the caller.
func createServiceTarget(ctx context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.InferenceServiceRequest)
	p, _ := PrincipalFrom(ctx)
	if len(r.GetService().GetJson()) == 0 {
		return target{scoped: true, owner: p.Name}, nil // the handler refuses it
	}
	v, err := v1alpha1.DecodeInferenceService(r.Service.Json)
	if err != nil {
		return target{}, err
	}
	return target{object: v.Name, queue: v.Spec.Queue, owner: p.Name, scoped: true}, nil
}

func listServicesTarget(_ context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.ListInferenceServicesRequest)
	if q := r.GetQueue(); q != "" {
		return target{queue: q, scoped: true, anyOwner: true}, nil
	}
	return target{anyOwner: true}, nil
}
