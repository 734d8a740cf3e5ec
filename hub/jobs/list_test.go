// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// listAll pages through List with limit and returns the names in order.
func listAll(t *testing.T, js *jobs.Service, opts jobs.ListOptions) []string {
	t.Helper()
	var names []string
	for pages := 0; ; pages++ {
		res, err := js.List(testCtx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		if opts.Limit > 0 && int64(len(res.Items)) > opts.Limit {
			t.Fatalf("page of %d items, limit %d", len(res.Items), opts.Limit)
		}
		for _, j := range res.Items {
			names = append(names, j.Name)
		}
		if res.Continue == "" {
			return names
		}
		if pages > 1000 {
			t.Fatal("list does not end")
		}
		opts.Continue = res.Continue
	}
}

// TestListFiltersPageExactly runs with the store scan and with the list
// index (listindex.go): both page the same names.
func TestListFiltersPageExactly(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) { testListFiltersPageExactly(t, indexed) })
	}
}

func testListFiltersPageExactly(t *testing.T, indexed bool) {
	ctx := testCtx(t)
	qa, qb := uniq("qa"), uniq("qb")
	var opts []jobs.Option
	if indexed {
		opts = append(opts, jobs.WithListIndex(runIndex(t)))
	}
	js, _ := services(t, opts, qa, qb)
	prefix := uniq("l")
	var wantA, wantRunning, wantC1 []string
	for i := range 23 {
		name, q := fmt.Sprintf("%s-%02d", prefix, i), qb
		if i%3 == 0 {
			q = qa
			wantA = append(wantA, name)
		}
		if _, _, _, err := js.Submit(ctx, job(name, q), false); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			cluster := fmt.Sprintf("c%d", i%8/4)
			_, _, err := js.UpdateStatus(ctx, name, func(st *v1alpha1.JobStatus) error {
				st.Phase = v1alpha1.JobRunning
				st.Members = []v1alpha1.MemberStatus{{Index: 0, Cluster: cluster}, {Index: 1, Cluster: cluster}}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if q == qa {
				wantRunning = append(wantRunning, name)
			}
			if cluster == "c1" && q == qa {
				wantC1 = append(wantC1, name)
			}
		}
	}
	for _, limit := range []int64{1, 2, 5, 100} {
		if got := listAll(t, js, jobs.ListOptions{Queue: qa, Limit: limit}); !slices.Equal(got, wantA) {
			t.Errorf("queue filter, limit %d:\n got %v\nwant %v", limit, got, wantA)
		}
		got := listAll(t, js, jobs.ListOptions{Queue: qa, Phase: v1alpha1.JobRunning, Limit: limit})
		if !slices.Equal(got, wantRunning) {
			t.Errorf("queue+phase filter, limit %d: got %v want %v", limit, got, wantRunning)
		}
		got = listAll(t, js, jobs.ListOptions{Queue: qa, Cluster: "c1", Limit: limit})
		if !slices.Equal(got, wantC1) {
			t.Errorf("cluster filter, limit %d: got %v want %v", limit, got, wantC1)
		}
	}
	all := listAll(t, js, jobs.ListOptions{Limit: jobs.MaxListLimit})
	if paged := listAll(t, js, jobs.ListOptions{Limit: 3}); !slices.Equal(paged, all) {
		t.Errorf("unfiltered paging differs from one page: %d vs %d items", len(paged), len(all))
	}
}

func TestListRejectsBadInput(t *testing.T) {
	js, _ := services(t, nil)
	_, err := js.List(testCtx(t), jobs.ListOptions{Phase: "Sleeping"})
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) {
		t.Errorf("bad phase: %v", err)
	}
	if _, err := js.List(testCtx(t), jobs.ListOptions{Continue: "garbage!"}); !errors.Is(err, store.ErrInvalidContinue) {
		t.Errorf("bad token: %v", err)
	}
}

// TestListGoesOnPastACompaction: a paged list whose first page's revision
// a compaction removed goes on at the newest revision instead of failing,
// unfiltered and filtered (scanning the store), without listing a job
// twice or leaving out one that existed throughout; a job changed since
// shows its new state, one created since after the cursor shows, and every
// page reports the first page's revision.
func TestListGoesOnPastACompaction(t *testing.T) {
	ctx := testCtx(t)
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	js := jobs.New(st)
	qs := queues.New(st, js)
	if _, _, err := qs.Create(ctx, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, _, _, err := js.Submit(ctx, job(fmt.Sprintf("j-%02d", i), "q"), false); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []jobs.ListOptions{{Limit: 3}, {Limit: 3, Queue: "q"}} {
		first, err := js.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		got := names(first.Items)
		if len(got) != 3 {
			t.Fatalf("first page %v", got)
		}
		// After the first page: one job listed already is deleted, one not
		// listed yet is created and one changes.
		if _, _, err := js.Cancel(ctx, got[1]); err != nil {
			t.Fatal(err)
		}
		if _, _, err := js.Delete(ctx, got[1]); err != nil {
			t.Fatal(err)
		}
		added := "j-04-a" + opts.Queue
		if _, _, _, err := js.Submit(ctx, job(added, "q"), false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := js.UpdateStatus(ctx, "j-07", func(s *v1alpha1.JobStatus) error {
			s.Phase = v1alpha1.JobCancelled
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		rev, err := st.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Compact(ctx, rev); err != nil {
			t.Fatal(err)
		}
		opts.Continue = first.Continue
		var phase7 v1alpha1.JobPhase
		for opts.Continue != "" {
			page, err := js.List(ctx, opts)
			if err != nil {
				t.Fatalf("page after the compaction: %v", err)
			}
			if page.Revision != first.Revision {
				t.Errorf("page reports revision %d, the first page %d", page.Revision, first.Revision)
			}
			for _, j := range page.Items {
				if j.Name == "j-07" {
					phase7 = j.Status.Phase
				}
			}
			got = append(got, names(page.Items)...)
			opts.Continue = page.Continue
		}
		now := listAll(t, js, jobs.ListOptions{Limit: jobs.MaxListLimit})
		want := names(first.Items)
		for _, n := range now {
			if n > want[2] {
				want = append(want, n)
			}
		}
		if !slices.Contains(want, added) || !slices.Equal(got, want) {
			t.Errorf("%+v: listed %v, want %v", opts, got, want)
		}
		if phase7 != v1alpha1.JobCancelled {
			t.Errorf("j-07 listed as %q after it was cancelled", phase7)
		}
	}
}

func names(items []*v1alpha1.Job) []string {
	out := make([]string, len(items))
	for i, j := range items {
		out[i] = j.Name
	}
	return out
}
