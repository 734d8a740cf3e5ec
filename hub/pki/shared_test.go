// SPDX-License-Identifier: Apache-2.0

package pki_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
)

func sharedStore(t *testing.T) (context.Context, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return ctx, st
}

func newKey(t *testing.T) []byte {
	t.Helper()
	key := make([]byte, pki.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

// loadShared runs LoadOrCreateCA and the admin identity through s, as a
// replica starts.
func loadShared(t *testing.T, ctx context.Context, s *pki.Shared) (*pki.CA, error) {
	t.Helper()
	var ca *pki.CA
	err := s.Do(ctx, func(dir string) error {
		var err error
		if ca, err = pki.LoadOrCreateCA(dir); err != nil {
			return err
		}
		_, _, err = ca.AdminCertificate()
		return err
	})
	return ca, err
}

// TestSharedCA: the first replica's CA (here one it already had alone)
// becomes the shared one; a second replica with an empty data directory
// loads the same CA and admin identity; a rotation on one is what the
// other loads next; the stored record holds no key in the clear; the
// wrong key and a replica without a key are refused.
func TestSharedCA(t *testing.T) {
	ctx, st := sharedStore(t)
	key := newKey(t)
	dirA, dirB := filepath.Join(t.TempDir(), "pki"), filepath.Join(t.TempDir(), "pki")
	alone, err := pki.LoadOrCreateCA(dirA)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.CheckUnshared(ctx, st); err != nil {
		t.Fatalf("empty store: %v", err)
	}
	a, err := pki.NewShared(st, dirA, key)
	if err != nil {
		t.Fatal(err)
	}
	caA, err := loadShared(t, ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if caA.Hash() != alone.Hash() {
		t.Fatal("the CA a replica had alone was replaced instead of shared")
	}
	b, err := pki.NewShared(st, dirB, key)
	if err != nil {
		t.Fatal(err)
	}
	caB, err := loadShared(t, ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if caB.Hash() != caA.Hash() {
		t.Fatalf("second replica CA %s, want the first's %s", caB.Hash(), caA.Hash())
	}
	for _, f := range []string{"admin.crt", "admin.key", "ca.key"} {
		ra, _ := os.ReadFile(filepath.Join(dirA, f))
		rb, _ := os.ReadFile(filepath.Join(dirB, f))
		if len(ra) == 0 || !bytes.Equal(ra, rb) {
			t.Errorf("%s differs between the replicas", f)
		}
	}
	if fi, err := os.Stat(filepath.Join(dirB, "ca.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("loaded ca.key: %v, mode %v; want 0600", err, fi.Mode())
	}

	raw := store.NewReader(st, pki.KindPKI, store.JSONCodec[map[string]any]())
	rec, _, err := raw.Get(ctx, "hub")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := rec["files"].(map[string]any)
	if len(files) < 4 {
		t.Fatalf("stored files: %v", files)
	}
	for name, v := range files {
		sealed, _ := base64.StdEncoding.DecodeString(v.(string))
		if bytes.Contains(sealed, []byte("PRIVATE KEY")) || bytes.Contains(sealed, []byte("CERTIFICATE")) {
			t.Errorf("stored %s is not sealed", name)
		}
	}

	var rotated *pki.CA
	if err := a.Do(ctx, func(dir string) error {
		var err error
		rotated, err = pki.RotateCA(dir, time.Hour)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	caB2, err := loadShared(t, ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if caB2.Hash() != rotated.Hash() || caB2.Hash() == caA.Hash() {
		t.Fatalf("after the rotation the other replica loads %s, want %s", caB2.Hash(), rotated.Hash())
	}
	if r, ok := caB2.Rotation(); !ok || r.Previous == nil {
		t.Fatal("the other replica does not see the rotation's overlap")
	}

	wrong, err := pki.NewShared(st, filepath.Join(t.TempDir(), "pki"), newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadShared(t, ctx, wrong); !errors.Is(err, pki.ErrUnseal) {
		t.Fatalf("wrong key: %v, want ErrUnseal", err)
	}
	if err := pki.CheckUnshared(ctx, st); !errors.Is(err, pki.ErrSharedWithoutKey) {
		t.Fatalf("a replica without the key: %v, want ErrSharedWithoutKey", err)
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	key := newKey(t)
	if err := os.WriteFile(good, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := pki.LoadKeyFile(good)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("LoadKeyFile = %x, %v", got, err)
	}
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString(key[:16])), 0o600)
	if _, err := pki.LoadKeyFile(short); !errors.Is(err, pki.ErrBadKey) || !strings.Contains(err.Error(), short) {
		t.Fatalf("16-byte key: %v", err)
	}
}
