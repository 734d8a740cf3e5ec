// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pools"
)

// poolsServer serves the Pools service.
type poolsServer struct {
	shoalv1.UnimplementedPoolsServer
	pools *pools.Service
}

// RegisterPools returns the registration of the Pools service, for Config.Services.
func RegisterPools(ps *pools.Service) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterPoolsServer(r, &poolsServer{pools: ps}) }
}

func decodePool(req *shoalv1.PoolRequest) (*v1alpha1.GPUPool, error) {
	if len(req.GetPool().GetJson()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "set pool.json to a GPUPool in JSON")
	}
	p, err := v1alpha1.DecodeGPUPool(req.Pool.Json)
	if err != nil {
		return nil, err
	}
	if req.Name != "" && req.Name != p.Name {
		return nil, status.Errorf(codes.InvalidArgument, "the path names pool %q but the object is %q", req.Name, p.Name)
	}
	return p, nil
}

func (s *poolsServer) Create(ctx context.Context, req *shoalv1.PoolRequest) (*shoalv1.Object, error) {
	p, err := decodePool(req)
	if err != nil {
		return nil, err
	}
	out, rev, err := s.pools.Create(ctx, p)
	if err != nil {
		return nil, err
	}
	return object(out, rev)
}

func (s *poolsServer) Update(ctx context.Context, req *shoalv1.PoolRequest) (*shoalv1.Object, error) {
	p, err := decodePool(req)
	if err != nil {
		return nil, err
	}
	out, rev, err := s.pools.Update(ctx, p, req.GetPool().GetRevision())
	if err != nil {
		return nil, err
	}
	return object(out, rev)
}

func (s *poolsServer) Get(ctx context.Context, req *shoalv1.GetPoolRequest) (*shoalv1.Object, error) {
	p, rev, err := s.pools.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(p, rev)
}

func (s *poolsServer) List(ctx context.Context, _ *shoalv1.ListPoolsRequest) (*shoalv1.ListPoolsResponse, error) {
	ps, err := s.pools.List(ctx)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListPoolsResponse{Items: make([]*shoalv1.Object, 0, len(ps))}
	for _, p := range ps {
		o, err := object(p, revisionOf(p.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *poolsServer) Delete(ctx context.Context, req *shoalv1.GetPoolRequest) (*shoalv1.DeletePoolResponse, error) {
	if err := s.pools.Delete(ctx, req.Name); err != nil {
		return nil, err
	}
	return &shoalv1.DeletePoolResponse{}, nil
}
