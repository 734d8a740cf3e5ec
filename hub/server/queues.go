// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

// queuesServer serves the Queues service.
type queuesServer struct {
	shoalv1.UnimplementedQueuesServer
	queues *queues.Service
}

func newQueuesServer(qs *queues.Service) *queuesServer { return &queuesServer{queues: qs} }

// RegisterQueues returns the registration of the Queues service, for Config.Services.
func RegisterQueues(qs *queues.Service) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterQueuesServer(r, newQueuesServer(qs)) }
}

// decodeQueue strictly decodes the request's queue.
func decodeQueue(o *shoalv1.Object) (*v1alpha1.Queue, error) {
	if len(o.GetJson()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "set queue.json to a Queue in JSON")
	}
	return v1alpha1.DecodeQueue(o.Json)
}

func (s *queuesServer) Create(ctx context.Context, req *shoalv1.CreateQueueRequest) (*shoalv1.Object, error) {
	q, err := decodeQueue(req.Queue)
	if err != nil {
		return nil, err
	}
	q, rev, err := s.queues.Create(ctx, q)
	if err != nil {
		return nil, err
	}
	return object(q, rev)
}

func (s *queuesServer) Update(ctx context.Context, req *shoalv1.UpdateQueueRequest) (*shoalv1.Object, error) {
	q, err := decodeQueue(req.Queue)
	if err != nil {
		return nil, err
	}
	q, rev, err := s.queues.Update(ctx, q, req.Queue.Revision)
	if err != nil {
		return nil, err
	}
	return object(q, rev)
}

func (s *queuesServer) Get(ctx context.Context, req *shoalv1.GetQueueRequest) (*shoalv1.Object, error) {
	q, rev, err := s.queues.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(q, rev)
}

func (s *queuesServer) List(ctx context.Context, req *shoalv1.ListQueuesRequest) (*shoalv1.ListQueuesResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, cont, rev, err := s.queues.List(ctx, store.ListOptions{
		Limit: req.GetOptions().GetLimit(), Continue: req.GetOptions().GetContinue()})
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListQueuesResponse{Items: make([]*shoalv1.Object, 0, len(items)),
		Meta: &shoalv1.ListMeta{Continue: cont, Revision: rev}}
	for _, q := range items {
		if !users.Filter(p, users.List, users.Queues, q.Name, "") {
			continue
		}
		o, err := object(q, revisionOf(q.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *queuesServer) Delete(ctx context.Context, req *shoalv1.DeleteQueueRequest) (*shoalv1.DeleteQueueResponse, error) {
	if err := s.queues.Delete(ctx, req.Name); err != nil {
		return nil, err
	}
	return &shoalv1.DeleteQueueResponse{}, nil
}
