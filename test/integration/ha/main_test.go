// SPDX-License-Identifier: Apache-2.0

// Package ha_test is the fault test of a highly available hub: three real
// shoal-hub replicas on a three-member etcd, a hub cluster and two workload
// clusters of KWOK nodes with real agents, and the scheduler and dispatcher
// leader killed with SIGKILL while gangs are dispatched and jobs submitted.
package ha_test

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
	// fleet is the hub cluster and the two workload clusters.
	fleet *framework.Fleet
	// hubBin and agentBin are built once per test binary by TestMain.
	hubBin, agentBin string
)

// nodesPerCluster is each workload cluster's KWOK nodes (8 GPUs each).
const nodesPerCluster = 4

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the HA fault test in -short mode")
		os.Exit(0)
	}
	bin, err := os.MkdirTemp("", "shoal-ha-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := run(m, bin)
	_ = os.RemoveAll(bin)
	os.Exit(code)
}

func run(m *testing.M, bin string) int {
	cmd := exec.Command("go", "build", "-o", bin+"/", "./cmd/shoal-hub", "./cmd/shoal-agent")
	cmd.Dir = filepath.Join("..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	hubBin, agentBin = filepath.Join(bin, "shoal-hub"), filepath.Join(bin, "shoal-agent")
	opts := devfleet.Options{Clusters: 2, Profiles: []string{"hgx-h100"}, Nodes: nodesPerCluster}
	return framework.RunWithFleet(m, opts, func(f *framework.Fleet) { fleet = f })
}
