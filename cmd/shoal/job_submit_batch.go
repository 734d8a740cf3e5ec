// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// submitBatchSize is how many jobs one batch of the CLI carries (a
// SubmitStream message or a SubmitBatch call; the hub takes up to 1,000).
const submitBatchSize = 500

// submitted is what became of one job of a submission.
type submitted struct {
	name     string
	job      *v1alpha1.Job
	revision int64
	result   string
	err      error
}

// submitOne submits one job with Submit; a refusal is the error.
func submitOne(cmd *cobra.Command, cl shoalv1.JobsClient, j *v1alpha1.Job, dryRun bool) ([]submitted, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	var hdr metadata.MD
	obj, err := cl.Submit(cmd.Context(), &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}, DryRun: dryRun},
		grpc.Header(&hdr))
	if err != nil {
		return nil, outCallError("submit job/"+j.Name, err)
	}
	job, err := decodeJob(obj)
	if err != nil {
		return nil, err
	}
	res := ""
	if r := hdr.Get(v1alpha1.SubmitResultHeader); len(r) == 1 {
		res = r[0]
	}
	return []submitted{{name: j.Name, job: job, revision: obj.Revision, result: res}}, nil
}

// jobBatch is one batch request of a submission and the jobs it carries.
type jobBatch struct {
	jobs []*v1alpha1.Job
	req  *shoalv1.SubmitJobBatchRequest
}

// submitBatches submits jobs submitBatchSize at a time over one
// SubmitStream, each job accepted or refused on its own. A hub without
// SubmitStream (an older release) gets the batches with SubmitBatch, and
// one without that too gets the jobs one by one with Submit, stopping at
// the first refusal as that release's CLI did.
func submitBatches(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, dryRun bool) ([]submitted, error) {
	var batches []jobBatch
	for lo := 0; lo < len(jobs); lo += submitBatchSize {
		b := jobBatch{jobs: jobs[lo:min(lo+submitBatchSize, len(jobs))], req: &shoalv1.SubmitJobBatchRequest{DryRun: dryRun}}
		for _, j := range b.jobs {
			data, err := json.Marshal(j)
			if err != nil {
				return nil, err
			}
			b.req.Jobs = append(b.req.Jobs, &shoalv1.Object{Json: data})
		}
		batches = append(batches, b)
	}
	out, err := submitStream(cmd, cl, batches)
	if status.Code(err) == codes.Unimplemented && len(out) == 0 {
		return submitBatchCalls(cmd, cl, jobs, batches, dryRun)
	}
	if err != nil {
		return nil, outCallError("submit a batch of jobs", err)
	}
	return out, nil
}

// submitStream sends every batch on one SubmitStream without waiting for
// the answers, and reads the answers (one per batch, in order) as they
// come; it returns the results read so far with the error that ended the
// stream, if any, as the hub sent it.
func submitStream(cmd *cobra.Command, cl shoalv1.JobsClient, batches []jobBatch) ([]submitted, error) {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	stream, err := cl.SubmitStream(ctx)
	if err != nil {
		return nil, err
	}
	sent := make(chan struct{})
	go func() { // a Send that fails ends the stream: Recv below says why
		defer close(sent)
		for _, b := range batches {
			if stream.Send(b.req) != nil {
				return
			}
		}
		_ = stream.CloseSend()
	}()
	defer func() { cancel(); <-sent }()
	var out []submitted
	for i, b := range batches {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			err = status.Errorf(codes.Internal, "the hub ended the stream after %d of %d answers", i, len(batches))
		}
		if err != nil {
			return out, err
		}
		res, err := batchResults(b, resp)
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	// The hub ends the stream (OK) once it has seen the end of ours.
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = status.Errorf(codes.Internal, "the hub answered more than the %d batches sent", len(batches))
		}
		return out, err
	}
	return out, nil
}

// submitBatchCalls submits the batches with SubmitBatch, one call each,
// for a hub without SubmitStream; one without SubmitBatch either gets the
// jobs with submitEach.
func submitBatchCalls(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, batches []jobBatch, dryRun bool) ([]submitted, error) {
	var out []submitted
	for i, b := range batches {
		resp, err := cl.SubmitBatch(cmd.Context(), b.req)
		if status.Code(err) == codes.Unimplemented && i == 0 {
			return submitEach(cmd, cl, jobs, dryRun)
		}
		if err != nil {
			return nil, outCallError("submit a batch of jobs", err)
		}
		res, err := batchResults(b, resp)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// batchResults is what became of each job of b, from the hub's answer to
// its request.
func batchResults(b jobBatch, resp *shoalv1.SubmitJobBatchResponse) ([]submitted, error) {
	if len(resp.GetResults()) != len(b.jobs) {
		return nil, status.Errorf(codes.Internal, "the hub answered %d results for %d jobs", len(resp.GetResults()), len(b.jobs))
	}
	out := make([]submitted, len(b.jobs))
	for i, r := range resp.Results {
		s := submitted{name: b.jobs[i].Name, result: r.GetResult()}
		if e := r.GetError(); e != nil {
			s.err = outCallError("submit job/"+s.name, status.Error(codes.Code(e.GetCode()), e.GetMessage())) //nolint:gosec // a gRPC code
		} else if job, err := decodeJob(r.GetJob()); err != nil {
			return nil, err
		} else {
			s.job, s.revision = job, r.GetJob().GetRevision()
		}
		out[i] = s
	}
	return out, nil
}

// submitEach is Submit job after job, for a hub without SubmitBatch.
func submitEach(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, dryRun bool) ([]submitted, error) {
	var out []submitted
	for _, j := range jobs {
		r, err := submitOne(cmd, cl, j, dryRun)
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}
