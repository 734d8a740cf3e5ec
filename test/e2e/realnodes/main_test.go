// SPDX-License-Identifier: Apache-2.0

// Package realnodes runs Shoal end to end on real containers: a fleet whose
// workload clusters have real kubelets on containerd and runc
// (docs/real-nodes.md), the shipped shoal-hub and shoal-agent binaries, and
// jobs whose members run the rendezvous program (cmd/shoal-rendezvous).
// Every job goes in through the shoal CLI, as a user's would.
package realnodes

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
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/internal/images"
	"github.com/shoal-dev/shoal/test/framework"
)

var (
	fl *framework.Fleet
	// bins holds the static builds of the project's programs.
	bins string
	// hubCS and hubRC reach the hub cluster as its admin.
	hubCS kubernetes.Interface
	hubRC *rest.Config
	// workloads maps a workload cluster's name to its admin client, in fleet order.
	workloads    = map[string]kubernetes.Interface{}
	clusterNames []string
	// fleetUp is how long the fleet took to start (the note's figure).
	fleetUp time.Duration
)

// echoImage runs test/programs/echo: a long-running container for exec,
// attach and port-forward.
const echoImage = "shoal.local/echo:dev"

// programs are built static (they run inside images with nothing else).
var programs = []string{"shoal", "shoal-hub", "shoal-agent", "shoal-pause", "shoal-deviceplugin", "shoal-rendezvous", "shoal-trainer"}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "real-node end-to-end tests need root (kubelet, containerd, bridges, cgroups)")
		return 1
	}
	var err error
	if bins, err = buildPrograms(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(bins) }()
	bin := func(b string) string { return filepath.Join(bins, b) }
	// Preemption at once (the engine's default waits 30 minutes), as in
	// `make demo`: TestPreemptedTrainerResumesFromItsCheckpoint preempts.
	if err := os.Setenv("SHOAL_PREEMPT_AFTER", "0s"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	start := time.Now()
	real := devfleet.NewRealNodeOptions(1, bin("shoal-pause"), bin("shoal-deviceplugin"), bin("shoal-rendezvous"))
	real.Images = append(real.Images, images.Spec{Ref: echoImage, Binary: bin("echo")}, images.Spec{Ref: devfleet.TrainerImage, Binary: bin("shoal-trainer")})
	fl, err = framework.StartFleet(ctx, devfleet.Options{
		Profiles: []string{"hgx-h100"}, Clusters: 2, Nodes: 1, RealNodes: real,
		Shoal: &devfleet.ShoalOptions{HubBinary: bin("shoal-hub"), AgentBinary: bin("shoal-agent")},
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start fleet:", err)
		return 1
	}
	fleetUp = time.Since(start)
	fmt.Fprintf(os.Stderr, "real-node fleet up in %s (hub + 2 clusters of 1 real node), %d MiB resident\n",
		fleetUp.Round(100*time.Millisecond), fl.RSS()>>20)
	code := 1
	defer func() { _ = fl.Stop(code != 0) }()
	if hubCS, err = fl.Hub().Clientset(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if hubRC, err = fl.Hub().RESTConfig(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, c := range fl.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		workloads[c.Name] = cs
		clusterNames = append(clusterNames, c.Name)
	}
	code = m.Run()
	return code
}

// buildPrograms builds every program static into a temporary directory.
func buildPrograms() (string, error) {
	out, err := os.MkdirTemp("", "shoal-realnode-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", out + "/"}
	for _, p := range programs {
		args = append(args, "./cmd/"+p)
	}
	args = append(args, "./test/programs/echo")
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return out, nil
}
