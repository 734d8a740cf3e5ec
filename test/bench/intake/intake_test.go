// SPDX-License-Identifier: Apache-2.0

package intake

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/grpc"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/test/grpctest"
)

// fakeHub accepts every job of a SubmitBatch or SubmitStream and counts
// each name it was sent.
type fakeHub struct {
	shoalv1.UnimplementedJobsServer
	mu   sync.Mutex
	seen map[string]int
}

func (f *fakeHub) answer(req *shoalv1.SubmitJobBatchRequest) *shoalv1.SubmitJobBatchResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &shoalv1.SubmitJobBatchResponse{}
	for _, o := range req.Jobs {
		var j struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(o.Json, &j)
		f.seen[j.Metadata.Name]++
		resp.Results = append(resp.Results, &shoalv1.SubmitJobResult{Job: o, Result: "created"})
	}
	return resp
}

func (f *fakeHub) SubmitBatch(_ context.Context, req *shoalv1.SubmitJobBatchRequest) (*shoalv1.SubmitJobBatchResponse, error) {
	return f.answer(req), nil
}

func (f *fakeHub) SubmitStream(stream shoalv1.Jobs_SubmitStreamServer) error {
	return grpctest.Answer(stream, f.answer)
}

// TestRunSubmitsEachJobOnce runs the batched and the streamed modes
// against a fake hub: every job is sent once and counted as accepted, a
// call is a batch (a stream's message), and the result names the method.
func TestRunSubmitsEachJobOnce(t *testing.T) {
	metrics := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer metrics.Close()
	for stream, method := range map[bool]string{false: "Jobs/SubmitBatch", true: "Jobs/SubmitStream"} {
		hub := &fakeHub{seen: map[string]int{}}
		g := grpc.NewServer()
		shoalv1.RegisterJobsServer(g, hub)
		conn := grpctest.Serve(t, g)
		dial := func() (*grpc.ClientConn, error) { return conn, nil }
		opts := Options{Clients: 3, Jobs: 95, Batch: 10, Stages: 2, Stream: stream, Queue: "q", MetricsURL: metrics.URL}
		res, err := Run(t.Context(), dial, opts)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		calls := 0
		for _, s := range res.Stages {
			calls += s.Calls
		}
		if res.Method != method {
			t.Errorf("stream %v: method %s, want %s", stream, res.Method, method)
		}
		if res.Accepted != 95 || len(hub.seen) != 95 || calls != 10 {
			t.Errorf("stream %v: %d accepted, %d names, %d calls; want 95, 95, 10 (48 and 47 jobs in batches of 10)",
				stream, res.Accepted, len(hub.seen), calls)
		}
		for name, n := range hub.seen {
			if n != 1 {
				t.Errorf("stream %v: %s sent %d times", stream, name, n)
			}
		}
	}
}
