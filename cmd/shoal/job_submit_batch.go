// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// submitBatchSize is how many jobs one SubmitBatch call of the CLI carries
// (the hub takes up to 1,000).
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

// submitBatches submits jobs with SubmitBatch, submitBatchSize at a time,
// each job accepted or refused on its own. A hub without SubmitBatch (an
// older release) gets them one by one with Submit, stopping at the first
// refusal as that release's CLI did.
func submitBatches(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, dryRun bool) ([]submitted, error) {
	var out []submitted
	for lo := 0; lo < len(jobs); lo += submitBatchSize {
		chunk := jobs[lo:min(lo+submitBatchSize, len(jobs))]
		req := &shoalv1.SubmitJobBatchRequest{DryRun: dryRun, Jobs: make([]*shoalv1.Object, len(chunk))}
		for i, j := range chunk {
			b, err := json.Marshal(j)
			if err != nil {
				return nil, err
			}
			req.Jobs[i] = &shoalv1.Object{Json: b}
		}
		resp, err := cl.SubmitBatch(cmd.Context(), req)
		if status.Code(err) == codes.Unimplemented && lo == 0 {
			return submitEach(cmd, cl, jobs, dryRun)
		}
		if err != nil {
			return nil, outCallError("submit a batch of jobs", err)
		}
		if len(resp.GetResults()) != len(chunk) {
			return nil, status.Errorf(codes.Internal, "the hub answered %d results for %d jobs", len(resp.GetResults()), len(chunk))
		}
		for i, r := range resp.Results {
			s := submitted{name: chunk[i].Name, result: r.GetResult()}
			if e := r.GetError(); e != nil {
				s.err = outCallError("submit job/"+s.name, status.Error(codes.Code(e.GetCode()), e.GetMessage())) //nolint:gosec // a gRPC code
			} else if s.job, err = decodeJob(r.GetJob()); err != nil {
				return nil, err
			} else {
				s.revision = r.GetJob().GetRevision()
			}
			out = append(out, s)
		}
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
