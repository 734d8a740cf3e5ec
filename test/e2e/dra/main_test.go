// SPDX-License-Identifier: Apache-2.0

// Package dra runs Shoal end to end on a DRA-only workload cluster: KWOK
// nodes of the hgx-h100-dra profile carry no nvidia.com/gpu and no GFD
// label, their GPUs are ResourceSlices of the fleet's DRA driver simulator
// (internal/devfleet dra.go). A second cluster of the same nodes with the
// extended resource is the benchmark's baseline. The shipped shoal-hub and
// shoal-agent run them; the tests' jobs go in through the shoal CLI.
package dra

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// nodes is each workload cluster's node count (8 GPUs each).
const nodes = 8

// The profiles of the fleet's two workload clusters: DRA-only, and the same
// nodes with the extended resource nvidia.com/gpu (the benchmark's baseline).
const (
	profileDRA      = "hgx-h100-dra"
	profileExtended = "hgx-h100"
)

var (
	fl *framework.Fleet
	// bins holds the builds of shoal, shoal-hub and shoal-agent.
	bins string
	// draCS reaches the DRA workload cluster as admin.
	draCS   kubernetes.Interface
	draName string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if bins, err = buildPrograms(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(bins) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	fl, err = framework.StartFleet(ctx, devfleet.Options{
		Profiles: []string{profileDRA, profileExtended}, Clusters: 2, Nodes: nodes,
		Shoal: &devfleet.ShoalOptions{HubBinary: filepath.Join(bins, "shoal-hub"), AgentBinary: filepath.Join(bins, "shoal-agent")},
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start fleet:", err)
		return 1
	}
	code := 1
	defer func() { _ = fl.Stop(code != 0) }()
	for _, w := range fl.Workloads() {
		if w.Profile != profileDRA {
			continue
		}
		draName = w.Name
		if draCS, err = w.Clientset(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code = m.Run()
	return code
}

// buildPrograms builds the CLI, the hub and the agent into a temporary directory.
func buildPrograms() (string, error) {
	out, err := os.MkdirTemp("", "shoal-dra-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out+"/", "./cmd/shoal", "./cmd/shoal-hub", "./cmd/shoal-agent")
	cmd.Dir = filepath.Join("..", "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return out, nil
}
