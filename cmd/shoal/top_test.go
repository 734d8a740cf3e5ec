// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// fakeTopHub answers the three lists `shoal top` makes, two items a page,
// and counts the readings.
type fakeTopHub struct {
	t                      *testing.T
	clusters, queues, jobs []any
	lists                  int
}

func page(t *testing.T, all []any, cont string) ([]*shoalv1.Object, *shoalv1.ListMeta) {
	i := 0
	if cont != "" {
		i = int(cont[0] - '0')
	}
	end := min(i+2, len(all))
	var out []*shoalv1.Object
	for _, o := range all[i:end] {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &shoalv1.Object{Json: b})
	}
	meta := &shoalv1.ListMeta{}
	if end < len(all) {
		meta.Continue = string(rune('0' + end))
	}
	return out, meta
}

type fakeTopClusters struct {
	shoalv1.ClustersClient
	*fakeTopHub
}

func (f fakeTopClusters) ListClusters(_ context.Context, r *shoalv1.ListClustersRequest, _ ...grpc.CallOption) (*shoalv1.ListClustersResponse, error) {
	f.lists++
	items, meta := page(f.t, f.clusters, r.GetOptions().GetContinue())
	return &shoalv1.ListClustersResponse{Items: items, Meta: meta}, nil
}

type fakeTopQueues struct {
	shoalv1.QueuesClient
	*fakeTopHub
}

func (f fakeTopQueues) List(_ context.Context, r *shoalv1.ListQueuesRequest, _ ...grpc.CallOption) (*shoalv1.ListQueuesResponse, error) {
	items, meta := page(f.t, f.queues, r.GetOptions().GetContinue())
	return &shoalv1.ListQueuesResponse{Items: items, Meta: meta}, nil
}

type fakeTopJobs struct {
	shoalv1.JobsClient
	*fakeTopHub
}

func (f fakeTopJobs) List(_ context.Context, r *shoalv1.ListJobsRequest, _ ...grpc.CallOption) (*shoalv1.ListJobsResponse, error) {
	items, meta := page(f.t, f.jobs, r.GetOptions().GetContinue())
	return &shoalv1.ListJobsResponse{Items: items, Meta: meta}, nil
}

func topCluster(name string, state v1alpha1.ClusterState, gpus, free, unhealthy int32, beat time.Time) *v1alpha1.Cluster {
	return &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.ClusterStatus{State: state,
		LastHeartbeat: &metav1.Time{Time: beat},
		Inventory:     &v1alpha1.InventorySummary{GPUs: gpus, FreeGPUs: free, UnhealthyGPUs: unhealthy}}}
}

func newFakeTop(t *testing.T) (topAPI, *fakeTopHub) {
	now := time.Now()
	q := testqueue.New("research").Quota("h100", 16).Obj()
	q.Status = v1alpha1.QueueStatus{PendingJobs: 1, ActiveJobs: 2, UsedGPUs: map[string]int32{"h100": 24, "a100": 4, "a100-80gb": 4},
		BorrowedGPUs: map[string]int32{"h100": 8}}
	running := testjob.New("run").Queue("research").Members(2).GPUs(8).Obj()
	running.Status.Phase = v1alpha1.JobRunning
	running.Status.Members = []v1alpha1.MemberStatus{{Index: 0, Cluster: "eu1"}, {Index: 1, Cluster: "us1"}}
	pending := testjob.New("wait").Queue("research").Obj()
	pending.Status.Phase = v1alpha1.JobPending
	done := testjob.New("old").Queue("research").Obj()
	done.Status.Phase = v1alpha1.JobSucceeded
	done.Status.Members = []v1alpha1.MemberStatus{{Index: 0, Cluster: "eu1"}}
	h := &fakeTopHub{t: t,
		clusters: []any{topCluster("eu1", v1alpha1.ClusterReady, 64, 16, 8, now.Add(-3*time.Second)),
			topCluster("us1", v1alpha1.ClusterReady, 32, 32, 0, now), topCluster("ap1", v1alpha1.ClusterLost, 16, 0, 16, now.Add(-time.Hour))},
		queues: []any{q, testqueue.New("idle").Obj()},
		jobs:   []any{running, pending, done},
	}
	return topAPI{clusters: fakeTopClusters{fakeTopHub: h}, queues: fakeTopQueues{fakeTopHub: h}, jobs: fakeTopJobs{fakeTopHub: h}}, h
}

func TestTopShowsTheFleet(t *testing.T) {
	api, _ := newFakeTop(t)
	var b bytes.Buffer
	if err := runTop(t.Context(), &b, api, "hub:7443", time.Millisecond, 1, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"shoal top - hub:7443",
		"Fleet: 3 clusters (2 Ready, 1 Lost)   GPUs: 112 total, 48 free, 40 in use, 24 unhealthy",
		"Jobs: 1 Pending, 1 Running, 1 Succeeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	// eu1: 64 GPUs, 16 free, 40 in use, 8 unhealthy: 71% of the healthy ones in use, one live job, 3s since its heartbeat.
	for name, want := range map[string]string{
		"eu1":       "eu1 Ready 64 16 40 8 [####### ] 71% 1 3s",
		"us1":       "us1 Ready 32 32 0 0 [ ] 0% 1",
		"ap1":       "ap1 Lost 16 0 0 16 [ ] - 0 60m",
		"research":  "research a100 - 4 0 - 1 2",
		"a100-80gb": "a100-80gb - 4 0 -",
		"h100":      "h100 16 24 8 [##########] 150%",
		"idle":      "idle - - 0 0 - 0 0",
	} {
		got := strings.Join(rows[name], " ")
		if !strings.HasPrefix(got, want) {
			t.Errorf("row %s = %q, want it to start %q\n%s", name, got, want, out)
		}
	}
}

func TestTopRefreshesUntilTheIterationsAreDone(t *testing.T) {
	api, h := newFakeTop(t)
	var b bytes.Buffer
	if err := runTop(t.Context(), &b, api, "hub", time.Millisecond, 3, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "shoal top - hub"); n != 3 || h.lists != 6 {
		t.Fatalf("%d screens from %d cluster list pages, want 3 readings of 2 pages each:\n%s", n, h.lists, b.String())
	}
	ctx, cancel := context.WithCancel(t.Context())
	b.Reset()
	done := make(chan error)
	go func() { done <- runTop(ctx, &b, api, "hub", time.Hour, 0, true) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("interrupted top: %v, want nil", err)
	}
	if !strings.HasPrefix(b.String(), "\033[H\033[2Jshoal top - hub") {
		t.Fatalf("a terminal screen starts by clearing it: %q", b.String()[:min(40, b.Len())])
	}
}
