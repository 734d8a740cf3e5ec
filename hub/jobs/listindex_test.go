// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// runIndex runs a list index of the shared store for the test.
func runIndex(t *testing.T) *jobs.ListIndex {
	t.Helper()
	ix := jobs.NewListIndex(shared)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ix.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// Tests that read the index directly (retention) need it filled; a
	// list would scan meanwhile, a sweep would do nothing.
	for deadline := time.Now().Add(30 * time.Second); !ix.HasSynced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("job list index not synced after 30s")
		}
	}
	return ix
}

// TestListIndexSeesEveryWriteAtOnce lists, filtered by the index, right
// after each write: the first page waits for the index to hold it.
func TestListIndexSeesEveryWriteAtOnce(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qi")
	ix := runIndex(t)
	js, _ := services(t, []jobs.Option{jobs.WithListIndex(ix)}, q)
	owner := uniq("alice")
	var want []string
	for i := range 5 {
		name := uniq("ix")
		if _, _, _, err := js.SubmitAs(ctx, job(name, q), owner, false); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
		res, err := js.List(ctx, jobs.ListOptions{Queue: q, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range res.Items {
			got = append(got, j.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after %d submissions: got %v, want %v", i+1, got, want)
		}
	}
	if err := ix.Fresh(ctx); err != nil {
		t.Fatalf("the index did not catch up (lists scanned instead): %v", err)
	}
	// A write of another kind moves the store's revision past every job
	// change: only a progress event tells the index it is still fresh.
	services(t, nil, uniq("qother"))
	if err := ix.Fresh(ctx); err != nil {
		t.Fatalf("fresh after a queue write: %v", err)
	}
	if _, _, err := js.Cancel(ctx, want[0]); err != nil {
		t.Fatal(err)
	}
	res, err := js.List(ctx, jobs.ListOptions{Queue: q, Phase: v1alpha1.JobCancelled})
	if err != nil || len(res.Items) != 1 || res.Items[0].Name != want[0] {
		t.Fatalf("cancelled: %v %v", res.Items, err)
	}
	if n, err := js.ActiveJobs(ctx, q); err != nil || n != len(want)-1 {
		t.Fatalf("active jobs %d, %v; want %d", n, err, len(want)-1)
	}
	if _, _, err := js.Delete(ctx, want[0]); err != nil {
		t.Fatal(err)
	}
	res, err = js.List(ctx, jobs.ListOptions{Queue: q, Phase: v1alpha1.JobCancelled})
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("after delete: %v %v", res.Items, err)
	}
	if res, err := js.List(ctx, jobs.ListOptions{Owner: uniq("nobody")}); err != nil || len(res.Items) != 0 {
		t.Fatalf("unknown owner: %v %v", res.Items, err)
	}
}

// TestListReplicasOfAnInferenceService: Service keeps the jobs labelled as
// replicas of one inference service, Replicas those of any, through the
// index and through a scan alike.
func TestListReplicasOfAnInferenceService(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qr")
	svcA, svcB := uniq("chat"), uniq("embed")
	ix := runIndex(t)
	indexed, _ := services(t, []jobs.Option{jobs.WithListIndex(ix)}, q)
	scanned := jobs.New(shared)
	want := map[string][]string{}
	for i, svc := range []string{svcA, svcA, svcB, ""} {
		name := uniq("rep")
		j := job(name, q)
		if svc != "" {
			j.Labels = map[string]string{v1alpha1.LabelInferenceService: svc}
			want[svc] = append(want[svc], name)
			want["*"] = append(want["*"], name)
		}
		if _, _, _, err := indexed.Submit(ctx, j, false); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	slices.Sort(want["*"])
	for name, js := range map[string]*jobs.Service{"index": indexed, "scan": scanned} {
		for key, opts := range map[string]jobs.ListOptions{
			svcA: {Queue: q, Service: svcA}, svcB: {Service: svcB}, "*": {Queue: q, Replicas: true},
		} {
			res, err := js.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range res.Items {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, want[key]) {
				t.Errorf("%s, %+v: got %v, want %v", name, opts, got, want[key])
			}
		}
	}
}

// TestListIndexSeesAWholeBatchAtOnce: the jobs of a batch submission are
// stored in few transactions, each of one store revision; a list filtered
// by the index right after the batch returns them all. The index once
// called itself current to a transaction's revision after its first jobs
// (docs/scheduling.md, "Incremental state").
func TestListIndexSeesAWholeBatchAtOnce(t *testing.T) {
	ctx := testCtx(t)
	q := uniq("qb")
	ix := runIndex(t)
	js, _ := services(t, []jobs.Option{jobs.WithListIndex(ix)}, q)
	owner := uniq("bob")
	for round := range 5 {
		items := make([]jobs.BatchItem, 200)
		for i := range items {
			items[i].In = job(uniq("b"), q)
		}
		js.SubmitBatchAs(ctx, items, owner, false)
		for i, it := range items {
			if it.Err != nil {
				t.Fatalf("round %d: item %d refused: %v", round, i, it.Err)
			}
		}
		res, err := js.List(ctx, jobs.ListOptions{Queue: q, Owner: owner, Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if want := (round + 1) * len(items); len(res.Items) != want {
			t.Fatalf("round %d: the list right after the batch has %d jobs, want %d", round, len(res.Items), want)
		}
	}
}
