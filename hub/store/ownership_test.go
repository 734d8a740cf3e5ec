// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// owners is who may write each stored kind: only the owner package may
// construct a writable store.Collection of it (store.NewCollection, or an
// exported constructor returning a *store.Collection); everyone else reads
// through a store.Reader and asks the owner for changes
// (docs/architecture.md, "Who owns which record"). Each kind's storage
// schema is in hub/store/migrate/kinds.go (TestEveryKindHasASchema).
var owners = map[string]string{
	"jobs":              "hub/jobs",
	"queues":            "hub/queues",
	"modelversions":     "hub/models",
	"inferenceservices": "hub/inference",
	"gpupools":          "hub/pools",
	"reservations":      "hub/ledger",
	"ledgerclusters":    "hub/ledger",
	"clusters":          "hub/registry",
	"clusteruids":       "hub/registry",
	"clusternames":      "hub/registry",
	"jointokens":        "hub/registry",
	"inventories":       "hub/registry",
	"clusterleases":     "hub/registry",
	"rollouts":          "hub/rollout",
	"fairshare":         "hub/scheduler",
	"holds":             "hub/scheduler",
	"users":             "hub/users",
	"oidcbindings":      "hub/users",
	"pki":               "hub/pki",
}

const module = "github.com/shoal-dev/shoal"

// TestOneWriterPerKind fails when a package under hub/ constructs a
// writable collection of a kind it does not own.
func TestOneWriterPerKind(t *testing.T) {
	for _, v := range ownershipViolations(t, filepath.Join("..", ".."), module) {
		t.Error(v)
	}
}

// TestOwnershipCheckCatchesViolations proves the check fails: a scheduler
// that opens the jobs collection itself, and one that gets it from an
// exported constructor of hub/jobs.
func TestOwnershipCheckCatchesViolations(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"hub/jobs/jobs.go": `package jobs
import "example.com/m/hub/store"
const Kind = "jobs"
func Writable(st *store.Store) *store.Collection[int] { return store.NewCollection[int](st, Kind, nil) }
`,
		"hub/scheduler/direct.go": `package scheduler
import (
	"example.com/m/hub/jobs"
	"example.com/m/hub/store"
)
func open(st *store.Store) { _ = store.NewCollection(st, jobs.Kind, nil) }
`,
		"hub/scheduler/handed.go": `package scheduler
import (
	"example.com/m/hub/jobs"
	"example.com/m/hub/store"
)
func handed(st *store.Store) { _ = jobs.Writable(st) }
`,
		"hub/scheduler/unknown.go": `package scheduler
import st "example.com/m/hub/store"
func unknown(s *st.Store) { _ = st.NewCollection(s, "widgets", nil) }
`,
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := ownershipViolations(t, root, "example.com/m")
	want := []string{
		`hub/scheduler/direct.go:6: hub/scheduler constructs a writable "jobs" collection; its owner is hub/jobs`,
		`hub/scheduler/handed.go:6: hub/scheduler gets a writable collection from hub/jobs.Writable; ask hub/jobs or use a store.Reader`,
		`hub/scheduler/unknown.go:3: kind "widgets" has no owner in the table`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// pkg is one parsed package under hub/.
type pkg struct {
	rel    string // "hub/jobs"
	files  map[string]*ast.File
	tfiles map[string]*token.File // for line numbers
	consts map[string]string      // string constants by name
	// writable are the exported functions returning a *store.Collection.
	writable map[string]bool
}

// ownershipViolations parses every non-test file under root/hub and
// returns, sorted, each construction of a writable collection outside the
// kind's owner.
func ownershipViolations(t *testing.T, root, module string) []string {
	t.Helper()
	pkgs := parseHub(t, root)
	storePath := module + "/hub/store"
	var out []string
	for _, p := range pkgs {
		if p.rel == "hub/store" {
			continue
		}
		for fname, f := range p.files {
			imports := importNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				qual, name, ok := selector(call.Fun)
				if !ok {
					return true
				}
				target := imports[qual]
				line := lineOf(p, fname, call)
				switch {
				case target == storePath && name == "NewCollection":
					kind, err := kindOf(pkgs, p, imports, module, call)
					owner, known := owners[kind]
					switch {
					case err != nil:
						out = append(out, fmt.Sprintf("%s: %v", line, err))
					case !known:
						out = append(out, fmt.Sprintf("%s: kind %q has no owner in the table", line, kind))
					case owner != p.rel:
						out = append(out, fmt.Sprintf("%s: %s constructs a writable %q collection; its owner is %s", line, p.rel, kind, owner))
					}
				case strings.HasPrefix(target, module+"/"):
					rel := strings.TrimPrefix(target, module+"/")
					if q := pkgs[rel]; q != nil && q.writable[name] && rel != p.rel {
						out = append(out, fmt.Sprintf("%s: %s gets a writable collection from %s.%s; ask %s or use a store.Reader",
							line, p.rel, rel, name, rel))
					}
				}
				return true
			})
		}
	}
	sort.Strings(out)
	return out
}

// parseHub parses the non-test files of every package under root/hub.
func parseHub(t *testing.T, root string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(filepath.Join(root, "hub"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		if pkgs[dir] == nil {
			pkgs[dir] = &pkg{rel: dir, files: map[string]*ast.File{}, tfiles: map[string]*token.File{}, consts: map[string]string{}, writable: map[string]bool{}}
		}
		pk := pkgs[dir]
		pk.files[rel] = f
		collect(pk, f)
		pk.tfiles[rel] = fset.File(f.Pos())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func lineOf(p *pkg, fname string, n ast.Node) string {
	return fmt.Sprintf("%s:%d", fname, p.tfiles[fname].Line(n.Pos()))
}

// collect records a file's string constants and exported functions that
// return a *store.Collection.
func collect(p *pkg, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			if d.Tok != token.CONST {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							p.consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil || !d.Name.IsExported() || d.Type.Results == nil {
				continue
			}
			for _, r := range d.Type.Results.List {
				if returnsCollection(r.Type) {
					p.writable[d.Name.Name] = true
				}
			}
		}
	}
}

// returnsCollection matches *store.Collection[T] (under any import name).
func returnsCollection(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	x := star.X
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	sel, ok := x.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Collection"
}

// importNames maps each import's local name to its path.
func importNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = p
	}
	return out
}

// selector splits qual.Name or qual.Name[T...] into its parts.
func selector(e ast.Expr) (qual, name string, ok bool) {
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", "", false
	}
	return id.Name, sel.Sel.Name, true
}

// kindOf resolves the kind argument of a NewCollection call: a string
// literal, a constant of the package, or a constant of another hub package.
func kindOf(pkgs map[string]*pkg, p *pkg, imports map[string]string, module string, call *ast.CallExpr) (string, error) {
	if len(call.Args) < 2 {
		return "", fmt.Errorf("NewCollection with %d arguments", len(call.Args))
	}
	switch a := call.Args[1].(type) {
	case *ast.BasicLit:
		return strconv.Unquote(a.Value)
	case *ast.Ident:
		if v, ok := p.consts[a.Name]; ok {
			return v, nil
		}
	case *ast.SelectorExpr:
		if id, ok := a.X.(*ast.Ident); ok {
			if q := pkgs[strings.TrimPrefix(imports[id.Name], module+"/")]; q != nil {
				if v, ok := q.consts[a.Sel.Name]; ok {
					return v, nil
				}
			}
		}
	}
	return "", fmt.Errorf("the kind of a NewCollection call is not a string constant; declare it as one")
}
