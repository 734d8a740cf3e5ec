// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
	"github.com/shoal-dev/shoal/test/grpctest"
)

// intakeClients serves Jobs and Queues on an embedded store over an
// in-memory connection, with the error table applied as the real server
// does, and returns clients. opts configure the job intake.
func intakeClients(t testing.TB, opts ...jobs.Option) (shoalv1.JobsClient, shoalv1.QueuesClient) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	js := jobs.New(st, opts...)
	g := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(asAdmin(ctx), req)
			return resp, toStatus(ctx, info.FullMethod, err)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return toStatus(ss.Context(), info.FullMethod, h(srv, &wrappedStream{ServerStream: ss, ctx: asAdmin(ss.Context())}))
		}))
	RegisterJobs(js)(g)
	RegisterQueues(queues.New(st, js))(g)
	conn := grpctest.Serve(t, g)
	return shoalv1.NewJobsClient(conn), shoalv1.NewQueuesClient(conn)
}

// asAdmin is ctx of a call by the bootstrap admin, as the auth
// interceptor sets it.
func asAdmin(ctx context.Context) context.Context {
	return context.WithValue(ctx, principalKey{}, users.Principal{Name: v1alpha1.BootstrapAdminName,
		Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleAdmin}}})
}

const queueJSON = `{"apiVersion":"shoal.dev/v1alpha1","kind":"Queue","metadata":{"name":"research/nlp"},"spec":{"weight":2}}`

const jobJSON = `{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"llama"},
 "spec":{"queue":"research/nlp","gang":{"members":4,"gpusPerMember":8},
 "template":{"spec":{"containers":[{"name":"t","image":"busybox"}]}}}}`

func wantCode(t *testing.T, err error, code codes.Code, substr string) {
	t.Helper()
	if st, _ := status.FromError(err); st.Code() != code || !strings.Contains(st.Message(), substr) {
		t.Errorf("got %v, want %s mentioning %q", err, code, substr)
	}
}

func TestJobsAndQueuesOverGRPC(t *testing.T) {
	jc, qc := intakeClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(jobJSON)}})
	wantCode(t, err, codes.FailedPrecondition, `queue "research/nlp" does not exist`)
	if _, err := qc.Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queueJSON)}}); err != nil {
		t.Fatal(err)
	}
	_, err = qc.Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queueJSON)}})
	wantCode(t, err, codes.AlreadyExists, "research/nlp")

	bad := strings.Replace(jobJSON, `"members":4`, `"members":0,"colour":"red"`, 1)
	_, err = jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(bad)}})
	wantCode(t, err, codes.InvalidArgument, `unknown field "spec.gang.colour"`)
	bad = strings.Replace(jobJSON, `"members":4`, `"members":0`, 1)
	_, err = jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(bad)}})
	wantCode(t, err, codes.InvalidArgument, "spec.gang.members: Invalid value: 0: must be at least 1")

	w, err := jc.Watch(ctx, &shoalv1.WatchJobsRequest{Name: "llama"})
	if err != nil {
		t.Fatal(err)
	}
	// The headers come once the watch is open: the submission below is
	// after its start and must come through (without this wait the client
	// may submit before the server has even begun to watch).
	if _, err := w.Header(); err != nil {
		t.Fatal(err)
	}
	var hdr metadata.MD
	obj, err := jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(jobJSON)}}, grpc.Header(&hdr))
	if err != nil || obj.Revision == 0 || hdr.Get(v1alpha1.SubmitResultHeader)[0] != "created" {
		t.Fatalf("submit: %v (header %v)", err, hdr)
	}
	again, err := jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(jobJSON)}}, grpc.Header(&hdr))
	if err != nil || again.Revision != obj.Revision || hdr.Get(v1alpha1.SubmitResultHeader)[0] != "existing" {
		t.Fatalf("resubmit: %v (header %v)", err, hdr)
	}
	var j v1alpha1.Job
	if err := json.Unmarshal(obj.Json, &j); err != nil || j.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("submitted job %s: %v", obj.Json, err)
	}
	other := strings.Replace(jobJSON, `"members":4`, `"members":2`, 1)
	_, err = jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(other)}})
	wantCode(t, err, codes.AlreadyExists, "different spec")

	ev, err := w.Recv()
	if err != nil || ev.Type != shoalv1.WatchEvent_ADDED || ev.Object.Revision != obj.Revision {
		t.Fatalf("watch: %v %v", ev, err)
	}
	list, err := jc.List(ctx, &shoalv1.ListJobsRequest{Queue: "research/nlp", Phase: "Pending"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Revision != obj.Revision {
		t.Fatalf("list: %v %v", list, err)
	}
	_, err = qc.Delete(ctx, &shoalv1.DeleteQueueRequest{Name: "research/nlp"})
	wantCode(t, err, codes.FailedPrecondition, "1 job")
	_, err = jc.Delete(ctx, &shoalv1.DeleteJobRequest{Name: "llama"})
	wantCode(t, err, codes.FailedPrecondition, `job "llama" is Pending, not finished; cancel it first`)
	if _, err := jc.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "llama"}); err != nil {
		t.Fatal(err)
	}
	gone, err := jc.Delete(ctx, &shoalv1.DeleteJobRequest{Name: "llama"})
	if err != nil || !strings.Contains(string(gone.GetJson()), `"phase":"Cancelled"`) {
		t.Fatalf("delete of the cancelled job: %v %s", err, gone.GetJson())
	}
	_, err = jc.Get(ctx, &shoalv1.GetJobRequest{Name: "llama"})
	wantCode(t, err, codes.NotFound, "llama")
	if _, err := qc.Delete(ctx, &shoalv1.DeleteQueueRequest{Name: "research/nlp"}); err != nil {
		t.Fatal(err)
	}
	_, err = jc.Get(ctx, &shoalv1.GetJobRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
	_, err = qc.Update(ctx, &shoalv1.UpdateQueueRequest{Queue: &shoalv1.Object{Json: []byte(
		strings.Replace(queueJSON, "research/nlp", "research", 1)), Revision: 1}})
	wantCode(t, err, codes.Aborted, "revision")
}
