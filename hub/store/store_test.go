package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// testObj stands in for a stored API object.
type testObj struct {
	Spec   string `json:"spec"`
	Status string `json:"status,omitempty"`
}

// openEmbedded starts an embedded etcd in a temporary directory for one test.
func openEmbedded(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenEmbedded(t *testing.T) {
	start := time.Now()
	s := openEmbedded(t)
	t.Logf("embedded etcd ready in %s at %s", time.Since(start), s.ClientURL())
	if !s.Embedded() {
		t.Fatal("Embedded() = false for a DataDir store")
	}
	if _, err := s.Revision(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}
