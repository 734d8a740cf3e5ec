// SPDX-License-Identifier: Apache-2.0

// chartgen writes the kustomize bases deploy/hub and deploy/agent from the
// Helm charts in deploy/charts (internal/charts.Bases), so that the charts
// are the one source of both: make generate runs it, make verify checks
// that it changes nothing. A YAML file of a base that no template makes
// any more is removed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoal-dev/shoal/internal/charts"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	for _, b := range charts.Bases {
		files, err := b.Files(root)
		if err != nil {
			return err
		}
		old, err := filepath.Glob(filepath.Join(root, b.Dir, "*.yaml"))
		if err != nil {
			return err
		}
		for _, p := range old {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			if _, ok := files[rel]; !ok && generated(p) {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
		}
		for rel, content := range files {
			p := filepath.Join(root, rel)
			if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, content) {
				continue
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				return err
			}
		}
		fmt.Printf("chartgen: %s from %s (%d files)\n", b.Dir, b.Chart, len(files))
	}
	return nil
}

// generated says whether the file at p carries chartgen's header.
func generated(p string) bool {
	b, err := os.ReadFile(p)
	return err == nil && strings.Contains(string(b), "(make generate). DO NOT EDIT.")
}
