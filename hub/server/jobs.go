// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

// jobsServer serves the Jobs service from the job intake.
type jobsServer struct {
	shoalv1.UnimplementedJobsServer
	jobs *jobs.Service
}

func newJobsServer(js *jobs.Service) *jobsServer { return &jobsServer{jobs: js} }

// RegisterJobs returns the registration of the Jobs service, for Config.Services.
func RegisterJobs(js *jobs.Service) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterJobsServer(r, newJobsServer(js)) }
}

func (s *jobsServer) Submit(ctx context.Context, req *shoalv1.SubmitJobRequest) (*shoalv1.Object, error) {
	if len(req.GetJob().GetJson()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "submit needs a job: set job.json to a Job in JSON")
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	j, err := submittedJob(ctx, req.Job.Json)
	if err != nil {
		return nil, err
	}
	stored, rev, res, err := s.jobs.SubmitAs(ctx, j, p.Name, req.DryRun)
	if err != nil {
		return nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(v1alpha1.SubmitResultHeader, string(res))) // informative only
	return object(stored, rev)
}

func (s *jobsServer) Get(ctx context.Context, req *shoalv1.GetJobRequest) (*shoalv1.Object, error) {
	j, rev, err := s.jobs.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(j, rev)
}

func (s *jobsServer) List(ctx context.Context, req *shoalv1.ListJobsRequest) (*shoalv1.ListJobsResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.jobs.List(ctx, jobs.ListOptions{
		Queue: req.Queue, Phase: v1alpha1.JobPhase(req.Phase), Cluster: req.Cluster, Owner: req.Owner,
		Limit: req.GetOptions().GetLimit(), Continue: req.GetOptions().GetContinue(),
	})
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListJobsResponse{Items: make([]*shoalv1.Object, 0, len(res.Items)),
		Meta: &shoalv1.ListMeta{Continue: res.Continue, Revision: res.Revision}}
	for _, j := range res.Items {
		if !users.Filter(p, users.List, users.Jobs, j.Spec.Queue, j.Status.Owner) {
			continue
		}
		o, err := object(j, revisionOf(j.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *jobsServer) Watch(req *shoalv1.WatchJobsRequest, stream grpc.ServerStreamingServer[shoalv1.WatchEvent]) error {
	ctx := stream.Context()
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	events := s.jobs.Watch(ctx, req.Revision, req.Name)
	// Answer the headers now, not with the first event: a REST watch
	// (grpc-gateway waits for them) starts its HTTP response at once.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for ev := range events {
		if ev.Type == store.Error {
			return ev.Err
		}
		if !mayWatch(p, ev.Job) {
			continue
		}
		o, err := object(ev.Job, ev.Revision)
		if err != nil {
			return err
		}
		if err := stream.Send(&shoalv1.WatchEvent{Type: eventType(ev.Type), Object: o, More: ev.More}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (s *jobsServer) Cancel(ctx context.Context, req *shoalv1.CancelJobRequest) (*shoalv1.Object, error) {
	j, rev, err := s.jobs.Cancel(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(j, rev)
}

// Delete removes a finished job; the last state comes back.
func (s *jobsServer) Delete(ctx context.Context, req *shoalv1.DeleteJobRequest) (*shoalv1.Object, error) {
	j, rev, err := s.jobs.Delete(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return object(j, rev)
}

// mayWatch reports whether p sees events of job j (a deletion without the
// last state only admins see).
func mayWatch(p users.Principal, j *v1alpha1.Job) bool {
	if j == nil {
		return users.Filter(p, users.Watch, users.Jobs, "", "")
	}
	return users.Filter(p, users.Watch, users.Jobs, j.Spec.Queue, j.Status.Owner)
}

// eventType converts a store event type to the API's.
func eventType(t store.EventType) shoalv1.WatchEvent_Type {
	switch t {
	case store.Added:
		return shoalv1.WatchEvent_ADDED
	case store.Modified:
		return shoalv1.WatchEvent_MODIFIED
	case store.Deleted:
		return shoalv1.WatchEvent_DELETED
	}
	return shoalv1.WatchEvent_TYPE_UNSPECIFIED
}

// revisionOf parses a metadata.resourceVersion set by hub/jobs or hub/queues.
func revisionOf(rv string) int64 {
	rev, _ := strconv.ParseInt(rv, 10, 64)
	return rev
}

// ReportCheckpoint records a checkpoint the job took, reported by the caller.
func (s *jobsServer) ReportCheckpoint(ctx context.Context, req *shoalv1.ReportCheckpointRequest) (*shoalv1.Object, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	r, err := checkpointReport(req)
	if err != nil {
		return nil, err
	}
	j, rev, err := s.jobs.ReportCheckpoint(ctx, req.Name, r, p.Name)
	if err != nil {
		return nil, err
	}
	return object(j, rev)
}
