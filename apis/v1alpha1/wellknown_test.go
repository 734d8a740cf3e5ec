// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestProtocolNamesDeclaredOnce fails when a "shoal.dev/…" name is declared
// (as a constant, variable or literal) in a non-test Go file outside
// apis/. Every name the hub and the agent share lives in wellknown.go.
func TestProtocolNamesDeclaredOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	bad := scanForPrefix(t, root)
	for _, b := range bad {
		t.Errorf("%s declares %s: use the name from apis/v1alpha1/wellknown.go", b.pos, b.lit)
	}
}

// TestProtocolScanCatchesViolation proves the scan fails on a violation.
func TestProtocolScanCatchesViolation(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nconst LabelJob = \"shoal.dev/job\"\n"
	if err := os.MkdirAll(filepath.Join(dir, "hub", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hub", "x", "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := scanForPrefix(t, dir); len(bad) != 1 {
		t.Fatalf("scan found %v, want the one violation", bad)
	}
}

type finding struct{ pos, lit string }

// prefixed matches a name with Prefix (not a longer domain such as
// gitops.shoal.dev/).
var prefixed = regexp.MustCompile(`(^|[^a-zA-Z0-9.-])` + regexp.QuoteMeta(Prefix))

// scanForPrefix returns every string literal starting with Prefix in the
// non-test, non-generated Go files under root outside apis/ and
// third_party/.
func scanForPrefix(t *testing.T, root string) []finding {
	t.Helper()
	var out []finding
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "apis" || d.Name() == "third_party" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && prefixed.MatchString(v) {
				out = append(out, finding{pos: fset.Position(lit.Pos()).String(), lit: lit.Value})
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
