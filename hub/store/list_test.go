// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

func TestListPaginationIsConsistent(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "list")
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("job-%02d", i)
		must[int64](t)(c.Create(ctx, name, testObj{Spec: "v1"}))
		want = append(want, name)
	}
	other := collection(t, "other")
	must[int64](t)(other.Create(ctx, "job-00", testObj{}))

	first := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{Limit: 10}))
	if len(first.Items) != 10 || first.Continue == "" {
		t.Fatalf("first page: %d items, continue %q", len(first.Items), first.Continue)
	}
	// Change the collection between pages: later pages must still show
	// the objects as they were at the first page's revision.
	must[int64](t)(c.Update(ctx, "job-15", testObj{Spec: "v2"}, 0))
	if err := c.Delete(ctx, "job-20", 0); err != nil {
		t.Fatal(err)
	}
	must[int64](t)(c.Create(ctx, "job-99", testObj{Spec: "new"}))

	got := names(first.Items)
	page := first
	for page.Continue != "" {
		page = must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{Limit: 10, Continue: page.Continue}))
		if page.Revision != first.Revision {
			t.Fatalf("page revision %d, want %d", page.Revision, first.Revision)
		}
		for _, it := range page.Items {
			if it.Object.Spec != "v1" {
				t.Errorf("%s: spec %q, want v1 as of the first page", it.Name, it.Object.Spec)
			}
		}
		got = append(got, names(page.Items)...)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paginated names %v, want %v", got, want)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatalf("names not sorted: %v", got)
	}

	now := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{}))
	if len(now.Items) != 25 || now.Continue != "" || now.Revision <= first.Revision {
		t.Fatalf("full list now: %d items, continue %q, revision %d", len(now.Items), now.Continue, now.Revision)
	}
	at := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{Revision: first.Revision}))
	if fmt.Sprint(names(at.Items)) != fmt.Sprint(want) {
		t.Fatalf("list at revision %d: %v", first.Revision, names(at.Items))
	}
}

func TestListRejectsForeignContinueTokens(t *testing.T) {
	ctx := testCtx(t)
	a, b := collection(t, "a"), collection(t, "b")
	for i := range 3 {
		must[int64](t)(a.Create(ctx, fmt.Sprint(i), testObj{}))
	}
	page := must[store.ListResult[testObj]](t)(a.List(ctx, store.ListOptions{Limit: 1}))
	for name, tok := range map[string]string{"other kind": page.Continue, "garbage": "%%%", "not json": "bm90IGpzb24"} {
		t.Run(name, func(t *testing.T) {
			if _, err := b.List(ctx, store.ListOptions{Continue: tok}); !errors.Is(err, store.ErrInvalidContinue) {
				t.Fatalf("error = %v, want ErrInvalidContinue", err)
			}
		})
	}
}

func names(items []store.Item[testObj]) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Name)
	}
	return out
}

func TestListAllReadsInChunks(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "many")
	const n = 2345 // more than two internal chunks
	for i := 0; i < n; i += 100 {
		txn := shared.Txn(ctx)
		for j := i; j < min(i+100, n); j++ {
			txn.Then(c.PutOp(fmt.Sprintf("%05d", j), testObj{Count: j}))
		}
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	res := must[store.ListResult[testObj]](t)(c.List(ctx, store.ListOptions{}))
	if len(res.Items) != n || res.Continue != "" {
		t.Fatalf("%d items, continue %q; want %d, none", len(res.Items), res.Continue, n)
	}
	for i, it := range res.Items {
		if it.Object.Count != i || it.Name != fmt.Sprintf("%05d", i) {
			t.Fatalf("item %d is %s %+v", i, it.Name, it.Object)
		}
	}
}

// TestNewestRevision: the newest mod revision among a kind's objects,
// whichever object changed last, not another kind's; 0 for none.
func TestNewestRevision(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "newest")
	newest := func() (int64, error) {
		revs, err := store.NewestRevisions(ctx, c)
		if err != nil {
			return 0, err
		}
		return revs[0], nil
	}
	if rev := must[int64](t)(newest()); rev != 0 {
		t.Fatalf("empty kind: %d, want 0", rev)
	}
	for i := range 5 {
		must[int64](t)(c.Create(ctx, fmt.Sprintf("o-%d", i), testObj{Spec: "v1"}))
	}
	want := must[int64](t)(c.Update(ctx, "o-1", testObj{Spec: "v2"}, 0))
	other := collection(t, "newest-other")
	must[int64](t)(other.Create(ctx, "later", testObj{}))
	if rev := must[int64](t)(newest()); rev != want {
		t.Fatalf("newest %d, want %d (o-1's update)", rev, want)
	}
}

// TestNewestRevisions reads several kinds' newest revisions in one read,
// in the order given (0 for an empty kind), each seeing a write
// acknowledged just before it, and refuses kinds of two stores.
func TestNewestRevisions(t *testing.T) {
	ctx := testCtx(t)
	a, b, empty := collection(t, "newest-a"), collection(t, "newest-b"), collection(t, "newest-empty")
	for i := range 20 {
		ra := must[int64](t)(a.Create(ctx, fmt.Sprintf("o-%d", i), testObj{}))
		rb := must[int64](t)(b.Create(ctx, fmt.Sprintf("o-%d", i), testObj{}))
		revs, err := store.NewestRevisions(ctx, a, empty, b.Reader())
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{ra, 0, rb}; !slices.Equal(revs, want) {
			t.Fatalf("after write %d: NewestRevisions = %v, want %v", i, revs, want)
		}
	}
	s2, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s2.Close() }()
	other := store.NewCollection(s2, "x", store.JSONCodec[testObj]())
	if _, err := store.NewestRevisions(ctx, a, other); err == nil {
		t.Fatal("NewestRevisions of two stores' kinds: no error")
	}
}

// TestListNames lists a kind's names keys-only, past one internal chunk,
// with each one's mod revision, at one revision a watch can follow from.
func TestListNames(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "names")
	revs := map[string]int64{}
	for i := range 1005 { // past one internal chunk of 1,000
		name := fmt.Sprintf("o-%05d", i)
		revs[name] = must[int64](t)(c.Create(ctx, name, testObj{Spec: "v1"}))
	}
	must[int64](t)(collection(t, "names-other").Create(ctx, "other", testObj{}))
	got, err := c.Reader().ListNames(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// At an earlier revision: as the kind was then.
	if then, err := c.Reader().ListNames(ctx, revs["o-00009"]); err != nil || len(then.Items) != 10 || then.Revision != revs["o-00009"] {
		t.Fatalf("at o-00009's revision: %d names at %d (%v), want 10 at %d", len(then.Items), then.Revision, err, revs["o-00009"])
	}
	if len(got.Items) != len(revs) {
		t.Fatalf("%d names, want %d", len(got.Items), len(revs))
	}
	for i, it := range got.Items {
		if want := fmt.Sprintf("o-%05d", i); it.Name != want || it.Revision != revs[want] {
			t.Fatalf("item %d: %s at %d, want %s at %d", i, it.Name, it.Revision, want, revs[want])
		}
	}
	if now := must[int64](t)(shared.Revision(ctx)); got.Revision != now {
		t.Fatalf("listed at %d, want the store's %d", got.Revision, now)
	}
}
