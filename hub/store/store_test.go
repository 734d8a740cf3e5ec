// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// testObj stands in for a stored API object.
type testObj struct {
	Spec   string `json:"spec"`
	Status string `json:"status,omitempty"`
	Count  int    `json:"count,omitempty"`
}

// shared is one embedded etcd for the package's tests (about 0.5 s to
// start); each test uses its own kinds, so tests do not see each other's
// objects.
var shared *store.Store

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shoal-store-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shared, err = store.Open(ctx, store.Config{DataDir: dir, ElectionTTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	return m.Run()
}

// collection returns a collection of testObj with a kind unique to the test.
func collection(t testing.TB, suffix string) *store.Collection[testObj] {
	t.Helper()
	kind := fmt.Sprintf("t%d%s", time.Now().UnixNano(), suffix)
	return store.NewCollection(shared, kind, store.JSONCodec[testObj]())
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestOpenEmbedded(t *testing.T) {
	for name, ec := range map[string]store.EmbeddedConfig{
		"in-process client": {},
		"network client":    {NetworkClient: true},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			openCtx, cancel := context.WithCancel(context.Background())
			s, err := store.Open(openCtx, store.Config{DataDir: t.TempDir(), Embedded: ec})
			cancel() // the store outlives the ctx of Open
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("embedded etcd ready in %s at %s", time.Since(start), s.ClientURL())
			if !s.Embedded() {
				t.Error("Embedded() = false for a DataDir store")
			}
			c := store.NewCollection(s, "jobs", store.JSONCodec[testObj]())
			rev, err := c.Create(testCtx(t), "a", testObj{})
			if err != nil {
				t.Fatal(err)
			}
			ch := c.Watch(testCtx(t), rev-1)
			if ev := <-ch; ev.Type != store.Added || ev.Name != "a" {
				t.Errorf("watch event %+v, want Added a", ev)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]store.Config{
		"neither data dir nor endpoints": {},
		"prefix without slash":           {DataDir: t.TempDir(), Prefix: "/shoal"},
	} {
		t.Run(name, func(t *testing.T) {
			if s, err := store.Open(testCtx(t), cfg); err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := must[*store.Store](t)(store.Open(testCtx(t), store.Config{DataDir: dir}))
	c := store.NewCollection(s, "jobs", store.JSONCodec[testObj]())
	rev := must[int64](t)(c.Create(testCtx(t), "a", testObj{Spec: "x"}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = must[*store.Store](t)(store.Open(testCtx(t), store.Config{DataDir: dir}))
	defer func() { _ = s.Close() }()
	c = store.NewCollection(s, "jobs", store.JSONCodec[testObj]())
	got, gotRev, err := c.Get(testCtx(t), "a")
	if err != nil || got.Spec != "x" || gotRev != rev {
		t.Fatalf("after reopen Get = %+v, %d, %v; want spec x at %d", got, gotRev, err, rev)
	}
}

func TestOpenEmbeddedPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	_, err = store.Open(testCtx(t), store.Config{DataDir: t.TempDir(), Embedded: store.EmbeddedConfig{ClientAddr: l.Addr().String()}})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Open on a taken port: %v, want EADDRINUSE", err)
	}
}
