// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
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
