// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// fakeWatchJobs streams the given job states for one watch.
type fakeWatchJobs struct {
	shoalv1.JobsClient
	t      *testing.T
	states []*v1alpha1.Job
	req    *shoalv1.WatchJobsRequest
}

func (f *fakeWatchJobs) Watch(_ context.Context, r *shoalv1.WatchJobsRequest, _ ...grpc.CallOption) (shoalv1.Jobs_WatchClient, error) {
	f.req = r
	var evs []*shoalv1.WatchEvent
	for i, j := range f.states {
		b, err := json.Marshal(j)
		if err != nil {
			f.t.Fatal(err)
		}
		evs = append(evs, &shoalv1.WatchEvent{Type: shoalv1.WatchEvent_MODIFIED, Object: &shoalv1.Object{Json: b, Revision: r.Revision + int64(i) + 1}})
	}
	return &fakeStream{events: evs}, nil
}

type fakeStream struct {
	grpc.ClientStream
	events []*shoalv1.WatchEvent
}

func (s *fakeStream) Recv() (*shoalv1.WatchEvent, error) {
	if len(s.events) == 0 {
		return nil, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func gangAt(phase v1alpha1.JobPhase, members ...v1alpha1.MemberPhase) *v1alpha1.Job {
	j := testjob.New("llm").Queue("q").Members(2).GPUs(8).Obj()
	j.Status.Phase = phase
	for i, m := range members {
		j.Status.Members = append(j.Status.Members, v1alpha1.MemberStatus{Index: int32(i), Cluster: "eu1", Phase: m})
	}
	return j
}

func TestWaitShowsTheGangThroughBothPhases(t *testing.T) {
	pending := gangAt(v1alpha1.JobPending)
	pending.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionPlaced, Status: metav1.ConditionFalse,
		Reason: "Unschedulable", Message: "no cluster has 16 free h100"}}
	placed := gangAt(v1alpha1.JobPlaced, v1alpha1.MemberPrepared, v1alpha1.MemberPending)
	placed.Status.Dispatch = &v1alpha1.DispatchStatus{Phase: v1alpha1.DispatchPreparing}
	committed := gangAt(v1alpha1.JobPlaced, v1alpha1.MemberRunning, v1alpha1.MemberPrepared)
	committed.Status.Dispatch = &v1alpha1.DispatchStatus{Phase: v1alpha1.DispatchCommitted}
	cl := &fakeWatchJobs{t: t, states: []*v1alpha1.Job{placed, committed, gangAt(v1alpha1.JobRunning, v1alpha1.MemberRunning, v1alpha1.MemberRunning),
		gangAt(v1alpha1.JobFailed)}}
	var b bytes.Buffer
	if err := waitForJobs(t.Context(), &b, cl, []storedJob{{job: pending, revision: 41}}); err != nil {
		t.Fatal(err)
	}
	want := "job/llm: 0/4 Pending: Unschedulable: no cluster has 16 free h100\n" +
		"job/llm: 1/4 Placed on eu1 (Preparing): 1/2 prepared, 0/2 running\n" +
		"job/llm: 3/4 Placed on eu1 (Committed): 2/2 prepared, 1/2 running\n" +
		"job/llm: 4/4 Running on eu1: 2/2 members running\n"
	if b.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
	if cl.req.Name != "llm" || cl.req.Revision != 41 {
		t.Fatalf("watched %+v, want job llm after revision 41", cl.req)
	}
}

func TestWaitFailsWhenTheJobEnds(t *testing.T) {
	failed := gangAt(v1alpha1.JobFailed, v1alpha1.MemberFailed, v1alpha1.MemberRunning)
	failed.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JobConditionFinished, Status: metav1.ConditionTrue,
		Reason: "BackoffLimitExceeded", Message: "member 0 failed 3 times"}}
	cl := &fakeWatchJobs{t: t, states: []*v1alpha1.Job{failed}}
	var b bytes.Buffer
	err := waitForJobs(t.Context(), &b, cl, []storedJob{{job: gangAt(v1alpha1.JobPending), revision: 1}})
	if !errors.Is(err, errJobEnded) || !strings.Contains(err.Error(), "BackoffLimitExceeded: member 0 failed 3 times") {
		t.Fatalf("err = %v, want the job's end with its Finished reason", err)
	}
	cl = &fakeWatchJobs{t: t}
	if err := waitForJobs(t.Context(), &b, cl, []storedJob{{job: gangAt(v1alpha1.JobPending), revision: 1}}); err == nil ||
		!strings.Contains(err.Error(), "ended the watch") {
		t.Fatalf("a watch that ends before the job runs: %v, want an error", err)
	}
}
