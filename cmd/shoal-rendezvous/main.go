// SPDX-License-Identifier: Apache-2.0

// Command shoal-rendezvous checks a gang's rendezvous contract as a
// distributed training job uses it: the member holding rank 0 listens on
// MASTER_PORT, every member connects to MASTER_ADDR:MASTER_PORT, and once
// every rank of WORLD_SIZE has joined each member prints the whole world and
// exits 0. It runs one process per member, holding LOCAL_WORLD_SIZE ranks
// from RANK. Built static (CGO_ENABLED=0) for the fleet's images. See
// docs/programs.md for the environment, the output and the exit codes.
//
//	shoal-rendezvous [--timeout 2m] [--world-size N]
//
// --world-size replaces WORLD_SIZE (which Shoal sets and a template may
// not), so that a test can give a member a wrong one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/internal/rendezvous"
)

// Exit codes: 1 the rendezvous failed, 2 the environment is wrong.
const (
	exitFailed = 1
	exitConfig = 2
)

func main() {
	klog.InitFlags(nil)
	timeout := flag.Duration("timeout", 0, "how long to wait for the world (default $"+rendezvous.EnvTimeout+", else 2m)")
	worldSize := flag.String("world-size", "", "use this instead of $"+rendezvous.EnvWorldSize)
	var show showList
	flag.Var(&show, "show", "before the rendezvous, print `env:NAME` or `file:PATH` (repeatable): "+
		"what a member's configuration gave it, e.g. a ConfigMap env or a Secret volume")
	flag.Parse()
	if err := show.print(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shoal-rendezvous:", err)
		os.Exit(exitConfig)
	}
	lookup := os.LookupEnv
	if *worldSize != "" {
		lookup = func(k string) (string, bool) {
			if k == rendezvous.EnvWorldSize {
				return *worldSize, true
			}
			return os.LookupEnv(k)
		}
	}
	cfg, err := rendezvous.FromEnv(lookup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shoal-rendezvous:", err)
		os.Exit(exitConfig)
	}
	if *timeout > 0 {
		cfg.Timeout = *timeout
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rendezvous.Run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shoal-rendezvous:", err)
		stop()
		os.Exit(exitFailed)
	}
}
