// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/grpctest"
)

// fakeIntake is a hub's job intake that accepts every job with members
// and refuses one without (InvalidArgument); it serves SubmitStream and
// SubmitBatch only when told to (an older hub answers Unimplemented), and
// counts the calls (and messages) of each method.
type fakeIntake struct {
	shoalv1.UnimplementedJobsServer
	stream, batch bool

	mu    sync.Mutex
	calls map[string]int
}

func (f *fakeIntake) count(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
}

// judge is what becomes of one job.
func (f *fakeIntake) judge(o *shoalv1.Object) (*shoalv1.Object, error) {
	var j v1alpha1.Job
	if err := json.Unmarshal(o.GetJson(), &j); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if j.Spec.Gang.Members < 1 {
		return nil, status.Error(codes.InvalidArgument, "spec.gang.members: Invalid value: 0: must be at least 1")
	}
	j.Status.Phase = v1alpha1.JobPending
	b, err := json.Marshal(&j)
	return &shoalv1.Object{Json: b, Revision: 7}, err
}

func (f *fakeIntake) Submit(ctx context.Context, req *shoalv1.SubmitJobRequest) (*shoalv1.Object, error) {
	f.count("Submit")
	o, err := f.judge(req.GetJob())
	if err == nil {
		_ = grpc.SetHeader(ctx, metadata.Pairs(v1alpha1.SubmitResultHeader, "created"))
	}
	return o, err
}

func (f *fakeIntake) answer(req *shoalv1.SubmitJobBatchRequest) *shoalv1.SubmitJobBatchResponse {
	resp := &shoalv1.SubmitJobBatchResponse{}
	for _, o := range req.GetJobs() {
		r := &shoalv1.SubmitJobResult{Result: "created"}
		var err error
		if r.Job, err = f.judge(o); err != nil {
			st := status.Convert(err)
			r.Result, r.Error = "", &shoalv1.SubmitJobError{Code: int32(st.Code()), Message: st.Message()} //nolint:gosec // a gRPC code
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func (f *fakeIntake) SubmitBatch(ctx context.Context, req *shoalv1.SubmitJobBatchRequest) (*shoalv1.SubmitJobBatchResponse, error) {
	if !f.batch {
		return f.UnimplementedJobsServer.SubmitBatch(ctx, req)
	}
	f.count("SubmitBatch")
	return f.answer(req), nil
}

func (f *fakeIntake) SubmitStream(stream shoalv1.Jobs_SubmitStreamServer) error {
	if !f.stream {
		return f.UnimplementedJobsServer.SubmitStream(stream)
	}
	return grpctest.Answer(stream, func(req *shoalv1.SubmitJobBatchRequest) *shoalv1.SubmitJobBatchResponse {
		f.count("SubmitStream message")
		return f.answer(req)
	})
}

// intakeClient serves f over an in-memory connection.
func intakeClient(t *testing.T, f *fakeIntake) shoalv1.JobsClient {
	t.Helper()
	f.calls = map[string]int{}
	g := grpc.NewServer()
	shoalv1.RegisterJobsServer(g, f)
	conn := grpctest.Serve(t, g)
	return shoalv1.NewJobsClient(conn)
}

// runSubmitJobs runs submitJobs against f and returns its output (stdout
// and stderr) and error.
func runSubmitJobs(t *testing.T, f *fakeIntake, jobs []*v1alpha1.Job) (string, error) {
	t.Helper()
	cl := intakeClient(t, f)
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetContext(t.Context())
	_, err := submitJobs(cmd, cl, jobs, false, "table")
	return out.String(), err
}

// TestSubmitManyJobsStreams submits more jobs than one batch holds, one of
// them invalid: they go over SubmitStream in batches of submitBatchSize,
// and a hub without it gets them with SubmitBatch, one without that too
// with Submit; the output is the same for the first two (each job's
// result, then the refusal count). One job goes with Submit alone.
func TestSubmitManyJobsStreams(t *testing.T) {
	var jobs []*v1alpha1.Job
	for i := range submitBatchSize + 3 {
		jobs = append(jobs, testjob.New(fmt.Sprintf("j%d", i)).Queue("pipeline").Members(1).GPUs(1).Obj())
	}
	jobs[submitBatchSize+1].Spec.Gang.Members = 0
	refusal := fmt.Sprintf("1 of %d jobs refused", len(jobs))

	streaming := &fakeIntake{stream: true, batch: true}
	streamed, err := runSubmitJobs(t, streaming, jobs)
	if err == nil || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("error %v, want %q", err, refusal)
	}
	for _, want := range []string{"job/j0 submitted (Pending in queue pipeline)\n", "job/j502 submitted",
		fmt.Sprintf("job/j%d refused: submit job/j%[1]d: spec.gang.members", submitBatchSize+1)} {
		if !strings.Contains(streamed, want) {
			t.Errorf("output lacks %q:\n%s", want, streamed)
		}
	}
	if c := streaming.calls; c["SubmitStream message"] != 2 || len(c) != 1 {
		t.Errorf("calls %v, want 2 SubmitStream messages and nothing else", c)
	}

	older := &fakeIntake{batch: true}
	batched, err := runSubmitJobs(t, older, jobs)
	if err == nil || !strings.Contains(err.Error(), refusal) || batched != streamed {
		t.Errorf("hub without SubmitStream: %v, output the same: %v", err, batched == streamed)
	}
	if c := older.calls; c["SubmitBatch"] != 2 || len(c) != 1 {
		t.Errorf("calls %v, want 2 SubmitBatch", c)
	}

	oldest := &fakeIntake{}
	_, err = runSubmitJobs(t, oldest, jobs)
	if err == nil || !strings.Contains(err.Error(), "spec.gang.members") {
		t.Errorf("hub without batches: %v, want the first refusal", err)
	}
	if c := oldest.calls; c["Submit"] != submitBatchSize+2 || len(c) != 1 {
		t.Errorf("calls %v, want Submit up to the refused job", c)
	}

	one, err := runSubmitJobs(t, streaming, jobs[:1])
	if err != nil || one != "job/j0 submitted (Pending in queue pipeline)\n" {
		t.Errorf("one job: %v\n%s", err, one)
	}
	if c := streaming.calls; c["Submit"] != 1 || len(c) != 1 {
		t.Errorf("calls %v, want one Submit", c)
	}
}
