// SPDX-License-Identifier: Apache-2.0

// Package lint checks that the project's lint rules do what they promise:
// the depguard import-direction rules in .golangci.yml reject a wrong-way
// import and accept the right way, and the shoal binary links no hub code and
// no etcd server (go list -deps).
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
		file     string // the importing file's name (default x.go)
		wantRule string // depguard rule expected to fire ("a|b": either); "" = clean
	}{
		{"hub imports federation", "hub/x", "federation/y", "", ""},
		{"federation imports hub", "federation/x", "hub/y", "", "federation"},
		{"agent imports hub", "agent/x", "hub/y", "", "agent"},
		{"hub imports agent", "hub/x", "agent/y", "", "hub"},
		{"apis imports federation", "apis/x", "federation/y", "", "apis"},
		{"hub imports test helpers", "hub/x", "test/y", "", "test-helpers"},
		{"cmd imports hub", "cmd/x", "hub/y", "", ""},
		{"shoal-hub imports hub", "cmd/shoal-hub", "hub/y", "", ""},
		{"shoal imports hub", "cmd/shoal", "hub/y", "", "cmd-shoal"},
		{"shoal subpackage imports hub", "cmd/shoal/x", "hub/y", "", "cmd-shoal"},
		{"shoal imports agent", "cmd/shoal", "agent/y", "", "cmd-shoal"},
		{"shoal imports etcd server", "cmd/shoal", etcdServer, "", "cmd-shoal"},
		{"shoal imports federation", "cmd/shoal", "federation/y", "", ""},
		{"shoal imports devfleet", "cmd/shoal", "internal/devfleet", "", ""},
		{"shoal test imports hub", "cmd/shoal", "hub/y", "x_test.go", ""},
		{"cmd imports test helpers", "cmd/x", "test/y", "", "test-helpers"},
		{"internal imports test helpers", "internal/x", "test/y", "", "test-helpers"},
		{"devfleet imports test helpers", "internal/devfleet", "test/y", "", "devfleet|test-helpers"},
		{"devfleet test imports test helpers", "internal/devfleet", "test/y", "x_test.go", "devfleet"},
		{"test imports devfleet", "test/framework", "internal/devfleet", "", ""},
	}
	gocache := t.TempDir() // shared by the cases: content-addressed, and apart from the user's
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, ".golangci.yml", string(cfg))
			write(t, dir, "go.mod", "module github.com/shoal-dev/shoal\n\ngo 1.26.0\n\n"+
				"require "+etcdServerModule+" v3.0.0\n\nreplace "+etcdServerModule+" => ./third/etcdserver\n")
			write(t, dir, "third/etcdserver/go.mod", "module "+etcdServerModule+"\n\ngo 1.26.0\n")
			write(t, dir, "third/etcdserver/embed/y.go", leaf)
			importPath := "github.com/shoal-dev/shoal/" + tc.to
			if tc.to == etcdServer {
				importPath = etcdServer
			} else {
				write(t, dir, tc.to+"/y.go", leaf)
			}
			file, pkg := tc.file, "x"
			if file == "" {
				file = "x.go"
			}
			if strings.HasSuffix(file, "_test.go") {
				write(t, dir, tc.from+"/doc.go", "// Package "+pkg+" is tested.\npackage "+pkg+"\n")
			}
			write(t, dir, tc.from+"/"+file, "// Package "+pkg+" imports y.\npackage "+pkg+"\n\nimport \""+importPath+"\"\n\n// X uses y.\nconst X = y.Y\n")
			// Other golangci-lint runs on the machine must not fail the case.
			cmd := exec.Command(lint, "run", "--allow-parallel-runners", "./...")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOCACHE="+gocache)
			out, err := cmd.CombinedOutput()
			if tc.wantRule == "" {
				if err != nil {
					t.Fatalf("expected clean lint, got %v:\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "depguard") || !firedRule(string(out), tc.wantRule) {
				t.Fatalf("expected depguard rule %s to reject %s -> %s, got err=%v:\n%s", tc.wantRule, tc.from, tc.to, err, out)
			}
		})
	}
}

// etcdServerModule stands in for the etcd server module in the scratch
// module (a local replace: the test needs no network); etcdServer is the
// package the cases import from it.
const (
	etcdServerModule = "go.etcd.io/etcd/server/v3"
	etcdServer       = etcdServerModule + "/embed"
)

// firedRule reports whether golangci-lint's output names one of the
// depguard lists in rules ("a|b") as the one that rejected the import.
func firedRule(out, rules string) bool {
	for _, r := range strings.Split(rules, "|") {
		if strings.Contains(out, "from list '"+r+"'") {
			return true
		}
	}
	return false
}

// leaf is a package y with one exported constant.
const leaf = "// Package y is a leaf.\npackage y\n\n// Y is exported.\nconst Y = 1\n"

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
