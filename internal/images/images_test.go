// SPDX-License-Identifier: Apache-2.0

package images

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestWriteArchiveIsDeterministicAndRunnable(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Ref: "shoal.local/prog:dev", Binary: bin, Args: []string{"--x"}, Env: []string{"A=b"}}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	if err := WriteArchive(s, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(s, b); err != nil {
		t.Fatal(err)
	}
	ia, err := tarball.ImageFromPath(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := tarball.ImageFromPath(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := ia.Digest()
	db, _ := ib.Digest()
	if da != db {
		t.Fatalf("same input gave digests %s and %s", da, db)
	}
	cf, err := ia.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/prog" {
		t.Fatalf("entrypoint = %v, want [/prog]", got)
	}
	if got := cf.Config.Cmd; len(got) != 1 || got[0] != "--x" {
		t.Fatalf("cmd = %v", got)
	}
	if cf.OS != "linux" {
		t.Fatalf("os = %q", cf.OS)
	}
}
