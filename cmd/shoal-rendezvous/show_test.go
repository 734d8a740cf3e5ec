// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShowPrintsEnvAndFiles(t *testing.T) {
	t.Setenv("SHOW_ME", "llama")
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var s showList
	for _, v := range []string{"env:SHOW_ME", "env:SHOAL_NOT_SET_ANYWHERE", "file:" + f} {
		if err := s.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	if err := s.print(&b); err != nil {
		t.Fatal(err)
	}
	want := "env SHOW_ME=llama\nenv SHOAL_NOT_SET_ANYWHERE unset\nfile " + f + ": one\\ntwo\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	if err := s.Set("bogus"); err == nil {
		t.Fatal("bogus item accepted")
	}
	missing := showList{"file:/does/not/exist"}
	if err := missing.print(&b); err == nil {
		t.Fatal("missing file printed without error")
	}
}
