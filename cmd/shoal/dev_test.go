// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

func runDev(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newDevCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// TestDevUpStatusDown drives `shoal dev up` (with shoal-hub and an agent,
// found on PATH), `status`, `env`, `kubeconfig` and `down` and checks that down
// leaves none of up's processes running.
func TestDevUpStatusDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Kubernetes processes")
	}
	if err := devfleet.CheckBinaries(devfleet.BinDir(), devfleet.KwokStagesDir()); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin+"/", "../shoal-hub", "../shoal-agent")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	t.Cleanup(func() {
		if f, err := devfleet.Open(dir); err == nil {
			_ = f.Stop()
		}
	})
	out, err := runDev(t.Context(), t, "up", "--dir", dir, "--clusters", "1", "--profile", "a100-mig", "--base-port", "0")
	if err != nil {
		t.Fatalf("dev up: %v\n%s", err, out)
	}
	// Two kube-apiservers, 16 KWOK nodes, shoal-hub, the agent started and its cluster Ready on the hub.
	if !strings.Contains(out, "dev up: 21/21 cluster a100-1: Ready on the hub") || !strings.Contains(out, "dev up: 1/21 ") {
		t.Errorf("dev up's progress does not go from 1/21 to 21/21:\n%s", out)
	}
	f, err := devfleet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := f.Processes()
	var names []string
	for _, p := range pids {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	// hub: etcd, kube-apiserver, kube-controller-manager (node lifecycle), shoal-hub;
	// workload: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, shoal-agent.
	want := []string{"etcd", "etcd", "kube-apiserver", "kube-apiserver", "kube-controller-manager", "kube-controller-manager",
		"kube-scheduler", "kwok", "shoal-agent", "shoal-hub"}
	if !slices.Equal(names, want) {
		t.Fatalf("fleet processes %v, want %v", names, want)
	}
	if out, err = runDev(t.Context(), t, "status", "--dir", dir); err != nil || !strings.Contains(out, "16/16") ||
		!strings.Contains(out, "v1.37.2") || !strings.Contains(out, "512") {
		t.Errorf("dev status (err %v) does not show 16/16 Ready nodes, v1.37.2 and 512 MIG slices:\n%s", err, out)
	}
	if !strings.Contains(out, "a100-1       Ready") || !strings.Contains(out, "export SHOAL_CONFIG="+f.Shoal.Config) {
		t.Errorf("dev status does not show the agent of a100-1 Ready and the SHOAL_CONFIG export:\n%s", out)
	}
	if out, err = runDev(t.Context(), t, "env", "--dir", dir); err != nil || !strings.Contains(out, "export SHOAL_CONFIG="+f.Shoal.Config) ||
		!strings.Contains(out, "export KUBECONFIG="+f.Kubeconfig) {
		t.Errorf("dev env (err %v):\n%s", err, out)
	}
	if out, err = runDev(t.Context(), t, "kubeconfig", "--dir", dir, "a100-1"); err != nil || strings.TrimSpace(out) != f.Cluster("a100-1").Kubeconfig {
		t.Errorf("dev kubeconfig a100-1 = %q (err %v), want %s", out, err, f.Cluster("a100-1").Kubeconfig)
	}
	if out, err = runDev(t.Context(), t, "down", "--dir", dir); err != nil {
		t.Fatalf("dev down: %v\n%s", err, out)
	}
	for _, p := range pids {
		if syscall.Kill(p.Pid, 0) == nil && p.Alive() {
			t.Errorf("%s (pid %d) still running after dev down", p.Name, p.Pid)
		}
	}
	if out, err = runDev(t.Context(), t, "status", "--dir", dir); err != nil || !strings.Contains(out, "no fleet") {
		t.Errorf("dev status after down (err %v):\n%s", err, out)
	}
}
