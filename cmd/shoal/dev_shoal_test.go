// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

func TestDevFindBinary(t *testing.T) {
	next, onPath, empty := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir string, mode os.FileMode) string {
		p := filepath.Join(dir, "shoal-hub")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nextBin := write(next, 0o755)
	pathBin := write(onPath, 0o755)
	notExec := t.TempDir()
	write(notExec, 0o644)
	tests := []struct {
		name    string
		dirs    []string
		path    string
		want    string
		wantErr bool
	}{
		{"next to shoal wins over PATH", []string{next}, onPath, nextBin, false},
		{"PATH when not next to shoal", []string{empty}, onPath, pathBin, false},
		{"not executable next to shoal: PATH", []string{notExec}, onPath, pathBin, false},
		{"nowhere", []string{empty}, empty, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			got, err := devFindBinary("shoal-hub", tt.dirs)
			if tt.wantErr {
				if !errors.Is(err, devfleet.ErrMissingShoalBinaries) || !strings.Contains(err.Error(), "make build") {
					t.Fatalf("err = %v, want ErrMissingShoalBinaries naming `make build`", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
