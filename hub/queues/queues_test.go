// SPDX-License-Identifier: Apache-2.0

package queues_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

var shared *store.Store

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shoal-queues-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if shared, err = store.Open(ctx, store.Config{DataDir: dir}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	return m.Run()
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func uniq(p string) string { return fmt.Sprintf("%s%d", p, time.Now().UnixNano()%1e12) }

func TestCreateMakesAncestorsAndRefusesDuplicates(t *testing.T) {
	ctx, qs := testCtx(t), queues.New(shared, jobs.New(shared))
	org := uniq("org")
	q, _, err := qs.Create(ctx, testqueue.New(org+"/nlp/llama").Weight(3).Quota("h100", 64).Obj())
	if err != nil || *q.Spec.Weight != 3 || q.UID == "" {
		t.Fatalf("create: %+v %v", q, err)
	}
	for _, anc := range []string{org, org + "/nlp"} {
		a, _, err := qs.Get(ctx, anc)
		if err != nil || a.Annotations[v1alpha1.AnnotationImplicit] != "true" || *a.Spec.Weight != 1 {
			t.Errorf("ancestor %s: %+v %v", anc, a, err)
		}
	}
	if _, _, err := qs.Create(ctx, testqueue.New(org+"/nlp/llama").Weight(1).Quota("h100", 64).Obj()); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("duplicate: %v", err)
	}
	if _, _, err := qs.Create(ctx, testqueue.New(org+"/nlp/x").Weight(0).Quota("h100", 64).Obj()); err == nil {
		t.Error("weight 0 accepted")
	}
	var inv *v1alpha1.InvalidError
	if _, _, err := qs.Create(ctx, testqueue.New("A/b/c/d").Weight(1).Quota("h100", 64).Obj()); !errors.As(err, &inv) {
		t.Errorf("bad name: %v", err)
	}
}

// TestUnknownGPUClassRefused: a quota key that names no GPU class would be
// stored and never charged, so create and update refuse it with its path.
func TestUnknownGPUClassRefused(t *testing.T) {
	ctx, qs := testCtx(t), queues.New(shared, jobs.New(shared))
	name := uniq("cls")
	var inv *v1alpha1.InvalidError
	_, _, err := qs.Create(ctx, testqueue.New(name).Weight(1).Quota("h1000", 16).Obj())
	if !errors.As(err, &inv) || len(inv.Errs) != 1 || inv.Errs[0].Field != "spec.quotas[h1000]" ||
		!strings.Contains(err.Error(), "h100") {
		t.Fatalf("create with unknown class: %v", err)
	}
	if _, _, err := qs.Create(ctx, testqueue.New(name).Weight(1).Quota("h100", 16).Quota("mig-1g.10gb", 7).Obj()); err != nil {
		t.Fatalf("create: %v", err)
	}
	_, _, err = qs.Update(ctx, testqueue.New(name).Weight(1).Quota("a100-81gb", 16).Obj(), 0)
	if !errors.As(err, &inv) || inv.Errs[0].Field != "spec.quotas[a100-81gb]" {
		t.Fatalf("update with unknown class: %v", err)
	}
}

func TestUpdateRevisionGuard(t *testing.T) {
	ctx, qs := testCtx(t), queues.New(shared, jobs.New(shared))
	name := uniq("u")
	_, rev, err := qs.Create(ctx, testqueue.New(name).Weight(1).Quota("h100", 64).Obj())
	if err != nil {
		t.Fatal(err)
	}
	q, rev2, err := qs.Update(ctx, testqueue.New(name).Weight(5).Quota("h100", 64).Obj(), rev)
	if err != nil || *q.Spec.Weight != 5 || q.Generation != 2 {
		t.Fatalf("update: %+v %v", q, err)
	}
	if _, _, err := qs.Update(ctx, testqueue.New(name).Weight(7).Quota("h100", 64).Obj(), rev); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale revision: %v", err)
	}
	if _, _, err := qs.Update(ctx, testqueue.New(name).Weight(7).Quota("h100", 64).Obj(), 0); err != nil {
		t.Errorf("unconditional update: %v", err)
	}
	if _, _, err := qs.Update(ctx, testqueue.New(uniq("none")).Weight(1).Quota("h100", 64).Obj(), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing queue: %v", err)
	}
	list, _, _, err := qs.List(ctx, store.ListOptions{})
	if err != nil || len(list) == 0 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	_ = rev2
}

func TestDeleteRefusedWhileInUse(t *testing.T) {
	ctx := testCtx(t)
	js := jobs.New(shared)
	qs := queues.New(shared, js)
	parent := uniq("d")
	child := parent + "/team"
	if _, _, err := qs.Create(ctx, testqueue.New(child).Weight(1).Quota("h100", 64).Obj()); err != nil {
		t.Fatal(err)
	}
	err := qs.Delete(ctx, parent)
	if !errors.Is(err, errs.ErrFailedPrecondition) || !strings.Contains(err.Error(), child) {
		t.Errorf("delete with a child: %v", err)
	}
	name := uniq("j")
	if _, _, _, err := js.Submit(ctx, testjob.New(name).Queue(child).Obj(), false); err != nil {
		t.Fatal(err)
	}
	err = qs.Delete(ctx, child)
	if !errors.Is(err, errs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "1 job") {
		t.Errorf("delete with a job: %v", err)
	}
	if q, _, _ := qs.Get(ctx, child); q.DeletionTimestamp != nil {
		t.Error("refused delete left the queue marked")
	}
	if _, _, err := js.Cancel(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := qs.Delete(ctx, child); err != nil {
		t.Fatalf("delete of an idle queue: %v", err)
	}
	if err := qs.Delete(ctx, parent); err != nil {
		t.Fatalf("delete of the emptied parent: %v", err)
	}
	if err := qs.Delete(ctx, parent); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// TestDeleteRacesSubmissions checks the invariant of Delete under
// concurrent submissions: when the delete succeeds, no job of the queue
// was accepted; when it is refused, the queue is still there.
func TestDeleteRacesSubmissions(t *testing.T) {
	ctx := testCtx(t)
	js := jobs.New(shared)
	qs := queues.New(shared, js)
	for round := range 5 {
		name := uniq("r")
		if _, _, err := qs.Create(ctx, testqueue.New(name).Weight(1).Quota("h100", 64).Obj()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, _, err := js.Submit(ctx, testjob.New(fmt.Sprintf("%s-%d", name, i)).Queue(name).Obj(), false); err == nil {
					mu.Lock()
					accepted++
					mu.Unlock()
				}
			}()
		}
		delErr := qs.Delete(ctx, name)
		wg.Wait()
		active, err := js.ActiveJobs(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if active != accepted {
			t.Fatalf("round %d: %d accepted, %d stored", round, accepted, active)
		}
		_, _, getErr := qs.Get(ctx, name)
		switch {
		case delErr == nil && (accepted > 0 || !errors.Is(getErr, store.ErrNotFound)):
			t.Fatalf("round %d: queue deleted but %d jobs accepted (get: %v)", round, accepted, getErr)
		case delErr != nil && getErr != nil:
			t.Fatalf("round %d: delete refused (%v) but the queue is gone: %v", round, delErr, getErr)
		}
	}
}

// TestSetStatus: the scheduler's status write keeps the spec, is skipped
// when nothing changed in meaning and refuses a queue read at an old revision.
func TestSetStatus(t *testing.T) {
	ctx, qs := testCtx(t), queues.New(shared, jobs.New(shared))
	w := queues.NewStatusWriter(shared)
	name := uniq("st")
	q, rev, err := qs.Create(ctx, testqueue.New(name).Weight(2).Quota("h100", 16).BorrowingLimit("h100", 0).Obj())
	if err != nil {
		t.Fatal(err)
	}
	st := v1alpha1.QueueStatus{PendingJobs: 2, ActiveJobs: 2, UsedGPUs: map[string]int32{"h100": 16}}
	if wrote, err := w.SetStatus(ctx, q, rev, st); !wrote || err != nil {
		t.Fatalf("first write: %v %v", wrote, err)
	}
	got, rev2, err := qs.Get(ctx, name)
	if err != nil || got.Status.PendingJobs != 2 || got.Status.UsedGPUs["h100"] != 16 ||
		*got.Spec.Weight != 2 || got.Spec.Quotas["h100"].Nominal != 16 || got.Generation != q.Generation {
		t.Fatalf("after status write: %+v %v", got, err)
	}
	same := st
	same.UsedGPUs = map[string]int32{"h100": 16}
	same.BorrowedGPUs = map[string]int32{}
	if wrote, err := w.SetStatus(ctx, got, rev2, same); wrote || err != nil {
		t.Errorf("same status rewritten: %v %v", wrote, err)
	}
	if _, err := w.SetStatus(ctx, q, rev, v1alpha1.QueueStatus{PendingJobs: 1}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale revision: %v", err)
	}
	// A spec update keeps the status.
	upd, _, err := qs.Update(ctx, testqueue.New(name).Weight(3).Quota("h100", 16).Obj(), 0)
	if err != nil || upd.Status.PendingJobs != 2 {
		t.Errorf("update lost the status: %+v %v", upd, err)
	}
}
