// Package lint checks that the project's lint rules do what they promise:
// the depguard import-direction rules in .golangci.yml reject a wrong-way
// import and accept the right way.
package lint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/test/framework"
)

// TestImportDirection builds a scratch module with the project's module path
// and lint config, then runs golangci-lint on a right-way and a wrong-way import.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs golangci-lint")
	}
	lint := filepath.Join(framework.CacheDir(), "tools", "bin", "golangci-lint")
	if _, err := os.Stat(lint); err != nil {
		t.Fatalf("golangci-lint not installed at %s: run `make tools`", lint)
	}
	cfg, err := os.ReadFile("../../.golangci.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		from, to string // package dirs; from imports to
		wantRule string // depguard rule expected to fire; "" = clean
	}{
		{"hub imports federation", "hub/x", "federation/y", ""},
		{"federation imports hub", "federation/x", "hub/y", "federation"},
		{"agent imports hub", "agent/x", "hub/y", "agent"},
		{"hub imports agent", "hub/x", "agent/y", "hub"},
		{"apis imports federation", "apis/x", "federation/y", "apis"},
		{"hub imports test helpers", "hub/x", "test/y", "test-helpers"},
		{"cmd imports hub", "cmd/x", "hub/y", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, ".golangci.yml", string(cfg))
			write(t, dir, "go.mod", "module github.com/shoal-dev/shoal\n\ngo 1.26.0\n")
			write(t, dir, tc.to+"/y.go", "// Package y is a leaf.\npackage y\n\n// Y is exported.\nconst Y = 1\n")
			write(t, dir, tc.from+"/x.go", "// Package x imports y.\npackage x\n\nimport \"github.com/shoal-dev/shoal/"+tc.to+"\"\n\n// X uses y.\nconst X = y.Y\n")
			cmd := exec.Command(lint, "run", "./...")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOCACHE="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if tc.wantRule == "" {
				if err != nil {
					t.Fatalf("expected clean lint, got %v:\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "depguard") {
				t.Fatalf("expected depguard to reject %s -> %s, got err=%v:\n%s", tc.from, tc.to, err, out)
			}
		})
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
