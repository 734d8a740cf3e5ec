// SPDX-License-Identifier: Apache-2.0

// Package agentpod runs one workload cluster's shoal-agent the way a user
// installs it: the shoal-agent chart (deploy/charts/shoal-agent), rendered
// with the Go helm library, as a Deployment on the cluster's real node
// (docs/real-nodes.md) from the release image `make images` builds, with
// the chart's ServiceAccount as its only identity. The hub stays a host
// process. Needs root, like test/e2e/realnodes.
package agentpod

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bins holds the static builds of the project's programs.
var bins string

// programs are built static (the agent's image and the real nodes' images
// hold nothing else).
var programs = []string{"shoal", "shoal-hub", "shoal-agent", "shoal-pause", "shoal-deviceplugin", "shoal-rendezvous"}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "agent-pod end-to-end tests need root (real nodes: kubelet, containerd, bridges, cgroups)")
		os.Exit(1)
	}
	var err error
	if bins, err = buildPrograms(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(bins)
	os.Exit(code)
}

// repoRoot is the checkout's root, relative to this package.
func repoRoot() string { return filepath.Join("..", "..", "..") }

// buildPrograms builds every program static into a temporary directory.
func buildPrograms() (string, error) {
	out, err := os.MkdirTemp("", "shoal-agentpod-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", out + "/"}
	for _, p := range programs {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return out, nil
}
