// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/store/migrate"
)

// rawCodec reads and writes the stored bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(b []byte) ([]byte, error)   { return b, nil }
func (rawCodec) Unmarshal(b []byte) ([]byte, error) { return b, nil }

// TestEveryKindHasASchema: the kinds of the owner table and those of
// package migrate are the same, so no stored kind goes without a version.
func TestEveryKindHasASchema(t *testing.T) {
	have := migrate.Kinds()
	want := slices.Sorted(maps.Keys(owners))
	if !slices.Equal(have, want) {
		t.Errorf("kinds with a schema %v, owned kinds %v: declare the schema of every stored kind in hub/store/migrate/kinds.go", have, want)
	}
}

// TestRecordsCarryTheirVersion writes through a collection and reads the
// bytes back: the version comes first, and a legacy record (written raw,
// as the previous release did) is migrated when read.
func TestRecordsCarryTheirVersion(t *testing.T) {
	ctx := testCtx(t)
	c := collection(t, "v")
	if _, err := c.Create(ctx, "a", testObj{Spec: "x"}); err != nil {
		t.Fatal(err)
	}
	raw := store.NewCollection[[]byte](shared, c.Kind(), rawCodec{})
	b, _, err := raw.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"storageVersion":1,"spec":"x"}` {
		t.Errorf("stored %s", b)
	}
	if _, err := raw.Create(ctx, "list", []byte(`[1]`)); err == nil {
		t.Error("stored a record that is not an object: it has no room for a version")
	}

	// A job of the previous release: no version, no member namespace.
	// (The kind is the jobs' own: its schema applies. The collection
	// lives under its own prefix so other tests' jobs stay apart.)
	legacy := []byte(`{"metadata":{"name":"j"},"status":{"phase":"Running","members":[{"index":0,"cluster":"eu1","phase":"Running"}]}}`)
	s := prefixed(t)
	jobs := store.NewCollection(s, "jobs", store.JSONCodec[*v1alpha1.Job]())
	putRaw(t, jobs.Key("j"), legacy)
	j, rev, err := jobs.Get(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Status.Members[0].Namespace; got != "shoal-c-eu1" {
		t.Errorf("legacy member's namespace %q, want shoal-c-eu1", got)
	}
	res, err := jobs.List(ctx, store.ListOptions{})
	if err != nil || len(res.Items) != 1 || res.Items[0].Object.Status.Members[0].Namespace != "shoal-c-eu1" {
		t.Errorf("List of the legacy job: %+v, %v", res.Items, err)
	}
	// The owner's next write stores the current version (2 and later).
	if _, err := jobs.Update(ctx, "j", j, rev); err != nil {
		t.Fatal(err)
	}
	b, _, err = store.NewCollection[[]byte](s, "jobs", rawCodec{}).Get(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := migrate.StoredVersion(b); err != nil || v != migrate.For("jobs").Version() || !bytes.Contains(b, []byte(`"namespace":"shoal-c-eu1"`)) {
		t.Errorf("rewritten job: version %d (%v): %s", v, err, b)
	}
	var back v1alpha1.Job // the previous release decodes it (unknown fields are ignored)
	if err := json.Unmarshal(b, &back); err != nil || back.Status.Members[0].Cluster != "eu1" {
		t.Errorf("the current version does not decode as a plain job: %v", err)
	}
}

// prefixed is a store on the shared etcd under a prefix of its own, for a
// test that needs a real kind name without meeting other tests' records.
func prefixed(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(testCtx(t), store.Config{Endpoints: []string{shared.ClientURL()},
		Prefix: fmt.Sprintf("/t%d/", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// putRaw stores b under key as it is, the way a hub without versions wrote
// its records (a collection always stamps its kind's version).
func putRaw(t *testing.T, key string, b []byte) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{shared.ClientURL()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	if _, err := cli.Put(testCtx(t), key, string(b)); err != nil {
		t.Fatal(err)
	}
}
