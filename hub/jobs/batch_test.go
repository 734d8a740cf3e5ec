// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestSubmitBatchEachJobOnItsOwn submits a batch mixing accepted and
// refused jobs over two queues (one missing), a name twice, a job already
// stored and one refused before the call: each gets what Submit would
// have answered, and the accepted ones are stored.
func TestSubmitBatchEachJobOnItsOwn(t *testing.T) {
	ctx, q1, q2 := testCtx(t), uniq("b1"), uniq("b2")
	var dryRuns atomic.Int32
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(validatorFunc(
		func(context.Context, *corev1.PodTemplateSpec) error { dryRuns.Add(1); return nil }))}, q1, q2)
	old := uniq("old")
	if _, _, _, err := js.SubmitAs(ctx, job(old, q1), "alice", false); err != nil {
		t.Fatal(err)
	}
	a, b, c, dup := uniq("a"), uniq("b"), uniq("c"), uniq("dup")
	bad := job(uniq("bad"), q1)
	bad.Spec.Gang.Members = 0
	dupOther := job(dup, q1)
	dupOther.Spec.Gang.Members = 4
	items := []jobs.BatchItem{
		{In: job(a, q1)}, {In: job(b, q2)}, {In: bad}, {In: job(c, "no/such/queue")},
		{In: job(dup, q1)}, {In: job(dup, q1)}, {In: dupOther}, {In: job(old, q1)},
		{Err: errs.Denied("not yours")},
	}
	js.SubmitBatchAs(ctx, items, "alice", false)
	want := []jobs.Result{jobs.Created, jobs.Created, "", "", jobs.Created, jobs.Existing, "", jobs.Existing, ""}
	for i, it := range items {
		if it.Result != want[i] || (it.Err == nil) != (want[i] != "") {
			t.Errorf("item %d: result %q, err %v; want %q", i, it.Result, it.Err, want[i])
		}
		if it.Err == nil && (it.Job.Status.Owner != "alice" || it.Revision == 0 || it.Job.ResourceVersion == "") {
			t.Errorf("item %d: job %+v at %d", i, it.Job.ObjectMeta, it.Revision)
		}
	}
	var inv *v1alpha1.InvalidError
	if !errors.As(items[2].Err, &inv) || !strings.Contains(inv.Error(), "spec.gang.members") {
		t.Errorf("invalid job: %v", items[2].Err)
	}
	if !errors.Is(items[3].Err, errs.ErrFailedPrecondition) || !strings.Contains(items[3].Err.Error(), "no/such/queue") {
		t.Errorf("missing queue: %v", items[3].Err)
	}
	if !errors.Is(items[6].Err, store.ErrAlreadyExists) {
		t.Errorf("same name, other spec: %v", items[6].Err)
	}
	if !errors.Is(items[8].Err, errs.ErrPermissionDenied) {
		t.Errorf("refused before the call: %v", items[8].Err)
	}
	for _, n := range []string{a, b, dup} {
		if got, _, err := js.Get(ctx, n); err != nil || got.Status.Phase != v1alpha1.JobPending {
			t.Errorf("get %s: %v", n, err)
		}
	}
	if n := dryRuns.Load(); n != 9 { // the first submission and every item but the one refused before
		t.Errorf("%d dry-runs, want 9", n)
	}
}

// TestSubmitBatchTakenNameFallsBack: a name stored by another owner makes
// the batch's transaction fail; its other jobs are then stored one by one
// and the taken one is refused as Submit refuses it.
func TestSubmitBatchTakenNameFallsBack(t *testing.T) {
	ctx, q := testCtx(t), uniq("bt")
	js, _ := services(t, nil, q)
	taken := uniq("taken")
	if _, _, _, err := js.SubmitAs(ctx, job(taken, q), "bob", false); err != nil {
		t.Fatal(err)
	}
	var items []jobs.BatchItem
	for i := range 150 { // two transactions: 100 and 50 jobs
		items = append(items, jobs.BatchItem{In: job(fmt.Sprintf("%s-%d", uniq("f"), i), q)})
	}
	items[120].In = job(taken, q)
	js.SubmitBatchAs(ctx, items, "alice", false)
	for i, it := range items {
		if i == 120 {
			if !errors.Is(it.Err, errs.ErrPermissionDenied) || !strings.Contains(it.Err.Error(), `"bob"`) {
				t.Errorf("taken name: %v", it.Err)
			}
			continue
		}
		if it.Err != nil || it.Result != jobs.Created {
			t.Errorf("item %d: %q %v", i, it.Result, it.Err)
		}
	}
	if items[0].Revision != items[99].Revision || items[100].Revision == items[0].Revision {
		t.Errorf("revisions %d %d %d: want the first 100 in one transaction", items[0].Revision, items[99].Revision, items[100].Revision)
	}
}

// TestSubmitBatchTriesAgainWhenTheQueueStatusMoved: a queue status written
// between a chunk's read of its queue and its transaction (the scheduler
// writes the counts about once a second under a steady intake) fails the
// transaction's guard; the chunk is tried again, still in one transaction,
// instead of storing its jobs one by one.
func TestSubmitBatchTriesAgainWhenTheQueueStatusMoved(t *testing.T) {
	ctx, q := testCtx(t), uniq("bq")
	js, qs := services(t, nil, q)
	status := queues.NewStatusWriter(shared)
	writes := 0
	js.BeforeWrite(func() {
		writes++
		cur, rev, err := qs.Get(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := status.SetStatus(ctx, cur, rev, v1alpha1.QueueStatus{PendingJobs: int32(writes)}); err != nil {
			t.Fatal(err)
		}
	})
	var items []jobs.BatchItem
	for i := range 150 { // two transactions: 100 and 50 jobs
		items = append(items, jobs.BatchItem{In: job(fmt.Sprintf("%s-%d", uniq("s"), i), q)})
	}
	js.SubmitBatchAs(ctx, items, "alice", false)
	for i, it := range items {
		if it.Err != nil || it.Result != jobs.Created {
			t.Fatalf("item %d: %q %v", i, it.Result, it.Err)
		}
	}
	if items[0].Revision != items[99].Revision || items[100].Revision != items[149].Revision || items[0].Revision == items[100].Revision {
		t.Errorf("revisions %d %d %d %d: want each chunk stored in one transaction", items[0].Revision, items[99].Revision,
			items[100].Revision, items[149].Revision)
	}
	if writes != 2 {
		t.Errorf("%d chunk writes tried, want 2 (the status written before the first try of each)", writes)
	}
}

func TestSubmitBatchDryRunStoresNothing(t *testing.T) {
	ctx, q := testCtx(t), uniq("bd")
	js, _ := services(t, nil, q)
	name := uniq("dry")
	items := []jobs.BatchItem{{In: job(name, q)}}
	js.SubmitBatchAs(ctx, items, "alice", true)
	if items[0].Err != nil || items[0].Result != jobs.DryRun || items[0].Revision != 0 {
		t.Fatalf("dry run: %+v", items[0])
	}
	if _, _, err := js.Get(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("dry run stored the job: %v", err)
	}
}
