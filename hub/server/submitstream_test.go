// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/grpctest"
)

// streamHub serves Jobs on js over an in-memory connection through the
// auth interceptor, for a caller that presents cert; ended receives what
// each stream's handler returned, as a status.
type streamHub struct {
	jobs  shoalv1.JobsClient
	ended chan error
}

func startStreamHub(t *testing.T, auth authorizer, js *jobs.Service, cert *x509.Certificate) streamHub {
	t.Helper()
	h := streamHub{ended: make(chan error, 8)}
	p, _ := peer.FromContext(withPeer(cert))
	g := grpc.NewServer(grpc.ChainStreamInterceptor(
		func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx := peer.NewContext(ss.Context(), p)
			err := toStatus(ctx, info.FullMethod, handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx}))
			h.ended <- err
			return err
		}, auth.stream))
	RegisterJobs(js)(g)
	conn := grpctest.Serve(t, g)
	h.jobs = shoalv1.NewJobsClient(conn)
	return h
}

// handlerEnd is what the next stream's handler returned.
func (h streamHub) handlerEnd(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.ended:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the stream's handler did not return")
		return nil
	}
}

// subStream opens a SubmitStream as sub, a submitter of queue a/b, on a
// fresh fixture; cancel cancels it.
func subStream(t *testing.T) (f submitFixture, hub streamHub, stream shoalv1.Jobs_SubmitStreamClient, cancel context.CancelFunc) {
	t.Helper()
	f = newSubmitFixture(t)
	hub = startStreamHub(t, f.auth, f.js, userCert(t, f.ca, "sub"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	stream, err := hub.jobs.SubmitStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f, hub, stream, cancel
}

// wantResults checks a batch's answer: the code of each job, in order,
// and that the refused ones' messages mention their substrings.
func wantResults(t *testing.T, resp *shoalv1.SubmitJobBatchResponse, want ...string) {
	t.Helper()
	if len(resp.GetResults()) != len(want) {
		t.Fatalf("%d results, want %d: %v", len(resp.GetResults()), len(want), resp)
	}
	for i, w := range want {
		code, substr, _ := strings.Cut(w, " ")
		r := resp.Results[i]
		got := codes.OK
		if r.Error != nil {
			got = codes.Code(r.Error.Code)
		}
		if got.String() != code || !strings.Contains(r.GetError().GetMessage(), substr) {
			t.Errorf("job %d: %s %q, want %s mentioning %q", i, got, r.GetError().GetMessage(), code, substr)
		}
	}
}

// TestSubmitStreamAnswersEachBatchInOrder sends three batches without
// waiting as a submitter of queue a/b: each is answered, in order, each
// job judged on its own as SubmitBatch judges it (a job in a queue the
// caller may not use is refused, the others stored), and audited, one
// entry a job; the client's close ends the stream with OK.
func TestSubmitStreamAnswersEachBatchInOrder(t *testing.T) {
	f, hub, stream, _ := subStream(t)
	bad := testjob.New("bad").Queue("a/b").Obj()
	bad.Spec.Gang.Members = 0
	batches := [][]*v1alpha1.Job{
		{testjob.New("s1").Queue("a/b").Obj(), testjob.New("elsewhere").Queue("x").Obj()},
		{bad, testjob.New("s2").Queue("a/b").Obj(), testjob.New("s3").Queue("a/b").Obj()},
		{testjob.New("s1").Queue("a/b").Obj()},
	}
	for _, b := range batches {
		req := &shoalv1.SubmitJobBatchRequest{}
		for _, j := range b {
			req.Jobs = append(req.Jobs, jobObject(t, j))
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var answers []*shoalv1.SubmitJobBatchResponse
	for range batches {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("answer %d: %v", len(answers), err)
		}
		answers = append(answers, resp)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last answer: %v, want the end (EOF)", err)
	}
	if err := hub.handlerEnd(t); err != nil {
		t.Fatalf("handler: %v", err)
	}
	wantResults(t, answers[0], "OK", "PermissionDenied Jobs/Submit")
	wantResults(t, answers[1], "InvalidArgument spec.gang.members", "OK", "OK")
	wantResults(t, answers[2], "OK")
	if r := answers[0].Results[0]; r.Result != string(jobs.Created) || r.Job.GetRevision() == 0 {
		t.Errorf("s1: %q at revision %d, want created", r.Result, r.Job.GetRevision())
	}
	if r := answers[2].Results[0]; r.Result != string(jobs.Existing) || r.Job.GetRevision() != answers[0].Results[0].Job.GetRevision() {
		t.Errorf("s1 again: %q at revision %d, want existing", r.Result, r.Job.GetRevision())
	}
	wantAudit := []string{"s1 OK", "elsewhere PermissionDenied", "bad InvalidArgument", "s2 OK", "s3 OK", "s1 OK"}
	entries := auditEntries(t, f.log)
	if len(entries) != len(wantAudit) {
		t.Fatalf("%d audit entries, want one per job: %s", len(entries), f.log)
	}
	for i, e := range entries {
		if got := e.Object + " " + e.Code; got != wantAudit[i] || e.User != "sub" || e.Method != "Jobs/SubmitStream" {
			t.Errorf("audit entry %d: %+v, want %q by sub", i, e, wantAudit[i])
		}
	}
}

// TestSubmitStreamEndsOnABatchItCannotJudge: a batch over the limit ends
// the stream with InvalidArgument once the batches before it are
// answered; they are audited, and the end is an entry of its own.
func TestSubmitStreamEndsOnABatchItCannotJudge(t *testing.T) {
	f, hub, stream, _ := subStream(t)
	over := &shoalv1.SubmitJobBatchRequest{Jobs: make([]*shoalv1.Object, jobs.MaxBatch+1)}
	for i := range over.Jobs {
		over.Jobs[i] = &shoalv1.Object{}
	}
	for _, req := range []*shoalv1.SubmitJobBatchRequest{
		{Jobs: []*shoalv1.Object{jobObject(t, testjob.New("first").Queue("a/b").Obj())}},
		over,
		{Jobs: []*shoalv1.Object{jobObject(t, testjob.New("never").Queue("a/b").Obj())}},
	} {
		if err := stream.Send(req); err != nil {
			break // the hub may have ended the stream already: Recv says why
		}
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("first answer: %v", err)
	}
	wantResults(t, resp, "OK")
	_, err = stream.Recv()
	wantCode(t, err, codes.InvalidArgument, "a batch holds 1 to 1000 jobs")
	wantCode(t, hub.handlerEnd(t), codes.InvalidArgument, "not 1001")
	if _, _, err := f.js.Get(t.Context(), "never"); err == nil {
		t.Error("a batch after the one that ended the stream was stored")
	}
	entries := auditEntries(t, f.log)
	if len(entries) != 2 || entries[0].Object != "first" || entries[0].Code != "OK" ||
		entries[1].Code != "InvalidArgument" || entries[1].Method != "Jobs/SubmitStream" {
		t.Errorf("audit: %s", f.log)
	}
}

// TestSubmitStreamEndsWithTheClient: a client that cancels mid-stream
// ends the handler (Canceled) without closing its side; the batch answered
// before was audited when it was answered and stays stored.
func TestSubmitStreamEndsWithTheClient(t *testing.T) {
	f, hub, stream, stop := subStream(t)
	if err := stream.Send(&shoalv1.SubmitJobBatchRequest{Jobs: []*shoalv1.Object{
		jobObject(t, testjob.New("kept").Queue("a/b").Obj())}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	wantResults(t, resp, "OK")
	if e := auditEntries(t, f.log); len(e) != 1 || e[0].Object != "kept" || e[0].Code != "OK" {
		t.Errorf("audit of the answered batch: %s", f.log)
	}
	stop()
	wantCode(t, hub.handlerEnd(t), codes.Canceled, "")
	if _, _, err := f.js.Get(t.Context(), "kept"); err != nil {
		t.Errorf("the answered job: %v", err)
	}
}

// TestSubmitStreamWithoutJobs needs no store: a caller who may create jobs
// nowhere is refused when the stream opens (one audit entry); a client
// that closes its side at once ends the stream with OK; an empty batch
// ends it with InvalidArgument.
func TestSubmitStreamWithoutJobs(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	auth := authorizer{users: fakeUsers{
		"sub":  {Name: "sub", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleSubmitter, Queue: "a"}}},
		"view": {Name: "view", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleViewer, Queue: "a"}}},
	}, audit: audit.New(&log)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(hub streamHub) shoalv1.Jobs_SubmitStreamClient {
		s, err := hub.jobs.SubmitStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	viewer := startStreamHub(t, auth, nil, userCert(t, ca, "view"))
	s := open(viewer)
	_, err = s.Recv()
	wantCode(t, err, codes.PermissionDenied, "Jobs/SubmitStream")
	wantCode(t, viewer.handlerEnd(t), codes.PermissionDenied, "")
	if e := auditEntries(t, &log); len(e) != 1 || e[0].User != "view" || e[0].Code != "PermissionDenied" {
		t.Errorf("audit of the refused stream: %s", log.String())
	}
	log.Reset()

	sub := startStreamHub(t, auth, nil, userCert(t, ca, "sub"))
	s = open(sub)
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("closed at once: %v, want the end (EOF)", err)
	}
	if err := sub.handlerEnd(t); err != nil {
		t.Errorf("handler: %v", err)
	}
	if log.String() != "" {
		t.Errorf("audit of a stream without batches: %s", log.String())
	}

	s = open(sub)
	if err := s.Send(&shoalv1.SubmitJobBatchRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	wantCode(t, err, codes.InvalidArgument, "not 0")
	wantCode(t, sub.handlerEnd(t), codes.InvalidArgument, "")
	if e := auditEntries(t, &log); len(e) != 1 || e[0].User != "sub" || e[0].Code != "InvalidArgument" {
		t.Errorf("audit of the empty batch: %s", log.String())
	}
}
