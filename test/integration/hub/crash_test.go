// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// kill sends SIGKILL and waits for the process to be gone.
func (h *hubProc) kill() {
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.exited
	h.cmd = nil
}

func crashJob(name string) *v1alpha1.Job {
	return testjob.New(name).Queue("crash").Members(2).GPUs(1).Container("main", "busybox:1.36").Obj()
}

// TestSubmissionsSurviveSIGKILL: 8 clients submit 1,000 jobs; the hub is
// killed with SIGKILL while submissions are in flight and restarted. Every
// acknowledged job is there exactly once, whole, and the queue index agrees.
func TestSubmissionsSurviveSIGKILL(t *testing.T) {
	h := startHub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := h.adminContext().ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	q, _ := json.Marshal(map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "Queue", "metadata": map[string]string{"name": "crash"}})
	if _, err := shoalv1.NewQueuesClient(conn).Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: q}}); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	jobsCl := shoalv1.NewJobsClient(conn)

	const clients, perClient, killAfter = 8, 125, 300
	var acked sync.Map
	var nAcked atomic.Int32
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				name := fmt.Sprintf("crash-%d-%d", c, i)
				b, _ := json.Marshal(crashJob(name))
				callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := jobsCl.Submit(callCtx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}})
				callCancel()
				if err != nil {
					select {
					case <-killed:
						return // the hub is gone; the rest is not acknowledged
					default:
						t.Errorf("submit %s before the kill: %v", name, err)
						return
					}
				}
				acked.Store(name, true)
				if nAcked.Add(1) == killAfter {
					once.Do(func() { close(killed); h.kill() }) // close first: calls fail from now on
				}
			}
		})
	}
	wg.Wait()
	if nAcked.Load() < killAfter {
		t.Fatalf("only %d submissions acknowledged before the kill", nAcked.Load())
	}
	if nAcked.Load() == clients*perClient {
		t.Fatal("every submission finished before the kill: nothing was in flight")
	}
	t.Logf("%d of %d submissions acknowledged before SIGKILL", nAcked.Load(), clients*perClient)

	h.start()
	all := listJobs(t, h, "")
	inQueue := listJobs(t, h, "crash")
	seen := map[string]int{}
	for _, j := range all {
		seen[j.Name]++
		if j.Spec.Queue != "crash" || j.Spec.Gang.Members != 2 || len(j.Spec.Template.Spec.Containers) != 1 || j.Status.Phase == "" {
			t.Errorf("job %s is not whole after the crash: %+v", j.Name, j)
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("job %s listed %d times", name, n)
		}
	}
	acked.Range(func(k, _ any) bool {
		if seen[k.(string)] != 1 {
			t.Errorf("acknowledged job %s missing after restart", k)
		}
		return true
	})
	if len(inQueue) != len(all) {
		t.Errorf("queue index lists %d jobs, the store %d", len(inQueue), len(all))
	}
	t.Logf("%d jobs stored after restart (%d acknowledged)", len(all), nAcked.Load())
}

// listJobs pages through every job (of queue, when set) on a fresh connection.
func listJobs(t *testing.T, h *hubProc, queue string) []v1alpha1.Job {
	t.Helper()
	cfg, err := h.adminContext().ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	cl := shoalv1.NewJobsClient(conn)
	var out []v1alpha1.Job
	opts := &shoalv1.ListOptions{Limit: 200}
	for {
		resp, err := cl.List(testCtx(t), &shoalv1.ListJobsRequest{Options: opts, Queue: queue})
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		for _, o := range resp.Items {
			var j v1alpha1.Job
			if err := json.Unmarshal(o.Json, &j); err != nil {
				t.Fatalf("job does not decode after the crash: %v", err)
			}
			out = append(out, j)
		}
		if resp.GetMeta().GetContinue() == "" {
			return out
		}
		opts.Continue = resp.Meta.Continue
	}
}
