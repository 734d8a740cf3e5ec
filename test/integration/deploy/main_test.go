// SPDX-License-Identifier: Apache-2.0

// Package deploy_test proves the Helm charts (deploy/charts) with their own
// identities: it installs what the charts render into a hub cluster and two
// workload clusters (KWOK nodes), mints tokens for exactly the charts'
// ServiceAccounts and runs the real shoal-hub and shoal-agent with exactly
// the arguments, environment and files the charts' pod templates give them
// (in-cluster paths mapped to directories here), no administrator
// kubeconfig anywhere in those processes; then registration, a gang across
// the two clusters and a GitOps sync, and the failures when a rule of the
// charts' RBAC is missing.
package deploy_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

var (
	env *framework.Fleet
	// bins holds shoal-hub, shoal-agent and shoal-gitserver.
	bins string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "shoal-deploy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/shoal-dev/shoal/cmd/shoal-hub",
		"github.com/shoal-dev/shoal/cmd/shoal-agent", "github.com/shoal-dev/shoal/cmd/shoal-gitserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	// Two small workload clusters (2 HGX H100 nodes, 16 GPUs each): a
	// gang of 3 x 8 GPUs must span both.
	opts := devfleet.Options{Clusters: 2, Profiles: []string{"hgx-h100"}, Nodes: 2}
	code := framework.RunWithFleet(m, opts, func(f *framework.Fleet) { env = f })
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func bin(name string) string { return filepath.Join(bins, name) }
