// SPDX-License-Identifier: Apache-2.0

// Command shoal-gitserver is a development Git server for `shoal dev up`:
// fluxcd's gittestserver (smart HTTP, unauthenticated, read-write) serving a
// directory of bare repositories on a loopback port. It is a dev tool only:
// no TLS, no authentication, never for anything but a local fleet.
//
//	shoal-gitserver --root DIR [--init fleet.git=FIXTURE] [--addr-file FILE]
//
// --init creates a bare repository from a directory with one commit on
// --branch (default main), unless the repository exists already. The base URL
// (http://127.0.0.1:PORT) is printed and written to --addr-file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fluxcd/pkg/gittestserver"
)

type repoInits []string

func (r *repoInits) String() string     { return strings.Join(*r, ",") }
func (r *repoInits) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shoal-gitserver:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		root, addrFile, branch string
		inits                  repoInits
	)
	flag.StringVar(&root, "root", "", "directory of bare repositories (required)")
	flag.StringVar(&addrFile, "addr-file", "", "file to write the server's base URL to")
	flag.StringVar(&branch, "branch", "main", "branch of the repositories --init creates")
	flag.Var(&inits, "init", "NAME.git=DIR: create repository NAME.git from DIR (one commit) unless it exists; repeatable")
	flag.Parse()
	if root == "" {
		return errors.New("--root is required")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	srv := gittestserver.NewGitServer(root).AutoCreate()
	for _, in := range inits {
		name, dir, ok := strings.Cut(in, "=")
		if !ok || name == "" || dir == "" {
			return fmt.Errorf("--init %q: want NAME.git=DIR", in)
		}
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			continue
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		if err := srv.InitRepo(filepath.Clean(abs), branch, name); err != nil {
			return fmt.Errorf("init %s from %s: %w", name, dir, err)
		}
	}
	if err := srv.StartHTTP(); err != nil {
		return err
	}
	defer srv.StopHTTP()
	url := srv.HTTPAddress()
	fmt.Printf("shoal-gitserver: serving %s at %s\n", srv.Root(), url)
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(url+"\n"), 0o644); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("shoal-gitserver: stopping")
	return nil
}
