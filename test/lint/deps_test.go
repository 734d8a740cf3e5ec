// SPDX-License-Identifier: Apache-2.0

package lint

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// cliForbidden are the import path prefixes the shoal binary must not link:
// the etcd server (embedded by the hub's store) and every hub and agent
// package. The CLI talks to the hub only over its gRPC API.
var cliForbidden = []string{
	"go.etcd.io/etcd/server/v3",
	"github.com/shoal-dev/shoal/hub",
	"github.com/shoal-dev/shoal/agent",
}

// TestShoalLinksNoHub fails when `go list -deps ./cmd/shoal` holds the etcd
// server or a hub or agent package, naming the import chain that pulls each in.
func TestShoalLinksNoHub(t *testing.T) {
	found := forbiddenDeps(t, "./cmd/shoal", cliForbidden)
	// One error per forbidden package entered from allowed code, with the
	// number of forbidden packages it brings along.
	entries := map[string][]string{}
	count := map[string]int{}
	for _, v := range found {
		i := slices.IndexFunc(v.chain, func(p string) bool { return matchesAny(p, cliForbidden) })
		entry := v.chain[i]
		if _, ok := entries[entry]; !ok {
			entries[entry] = v.chain[:i+1]
		}
		count[entry]++
	}
	for entry, chain := range entries {
		t.Errorf("the shoal binary links %s and %d forbidden package(s) with it (etcd server, hub, agent): %s",
			entry, count[entry]-1, strings.Join(chain, " -> "))
	}
}

// TestForbiddenDepsCatchesViolation proves the check finds a violation:
// shoal-hub links the embedded etcd server and the hub packages.
func TestForbiddenDepsCatchesViolation(t *testing.T) {
	found := forbiddenDeps(t, "./cmd/shoal-hub", cliForbidden)
	var pkgs []string
	for _, v := range found {
		pkgs = append(pkgs, v.pkg)
	}
	for _, want := range []string{"go.etcd.io/etcd/server/v3/embed", "github.com/shoal-dev/shoal/hub/store"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("the check does not find %s among shoal-hub's dependencies (found %v)", want, pkgs)
		}
	}
	for _, v := range found {
		if len(v.chain) < 2 || !strings.HasSuffix(v.chain[0], "/cmd/shoal-hub") || v.chain[len(v.chain)-1] != v.pkg {
			t.Errorf("chain %v of %s does not lead from cmd/shoal-hub to it", v.chain, v.pkg)
		}
	}
}

// violation is one forbidden dependency and the shortest import chain from
// the checked package to it.
type violation struct {
	pkg   string
	chain []string
}

// forbiddenDeps lists the non-test dependencies of pkg (go list -deps, run
// at the module root) whose import path is one of prefixes or under one.
func forbiddenDeps(t *testing.T, pkg string, prefixes []string) []violation {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	imports := map[string][]string{}
	var order []string // dependencies first, pkg last
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		imports[f[0]] = f[1:]
		order = append(order, f[0])
	}
	if len(order) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	root := order[len(order)-1]
	parent := shortestChains(root, imports)
	var found []violation
	for _, p := range order {
		if matchesAny(p, prefixes) {
			found = append(found, violation{pkg: p, chain: chainTo(p, parent)})
		}
	}
	return found
}

// shortestChains walks the import graph breadth first from root and returns
// each reached package's predecessor on a shortest chain.
func shortestChains(root string, imports map[string][]string) map[string]string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range imports[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return parent
}

func chainTo(p string, parent map[string]string) []string {
	var chain []string
	for ; p != ""; p = parent[p] {
		chain = append([]string{p}, chain...)
	}
	return chain
}

func matchesAny(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}
