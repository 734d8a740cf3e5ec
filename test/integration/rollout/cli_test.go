// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

// cli builds the shoal CLI and returns a runner that talks to h as admin.
func (h *realHub) cli(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "shoal")
	build := exec.Command("go", "build", "-o", bin, "github.com/shoal-dev/shoal/cmd/shoal")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build shoal: %v\n%s", err, out)
	}
	certPEM, keyPEM, err := h.ca.AdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &configv1alpha1.ClientConfig{}
	cfg.SetContext(configv1alpha1.Context{Name: "test", Hub: h.addr, CAData: string(h.ca.CertPEM), CertData: string(certPEM), KeyData: string(keyPEM)})
	path := filepath.Join(dir, "config")
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SHOAL_CONFIG="+path)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// checkCLI runs the GitOps and rollout commands against the hub after the
// rollouts of TestRolloutThroughHubAndAgents.
func checkCLI(t *testing.T, h *realHub, url, good, fixed string) {
	t.Helper()
	shoal := h.cli(t)
	must := func(want []string, args ...string) {
		t.Helper()
		out, err := shoal(args...)
		if err != nil {
			t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("shoal %s lacks %q:\n%s", strings.Join(args, " "), w, out)
			}
		}
	}
	must([]string{"eu1", "us1", fixed[:12], "Healthy"}, "gitops", "status")
	must([]string{"bad", "Halted", "fixed", "Succeeded"}, "rollout", "list")
	must([]string{"wave 1 (failed, rolled back): eu1", "wave 2 (pending): us1"}, "rollout", "get", "bad")
	must([]string{"wave 1 (passed): eu1", "wave 2 (passed): us1"}, "rollout", "get", "fixed")
	out, err := shoal("cluster", "gitops", "set", "eu1", "--url", "https://bot:hunter2@git.example.com/fleet.git")
	if err == nil || !strings.Contains(out, "credentials") {
		t.Fatalf("a URL with credentials was not refused: %v\n%s", err, out)
	}
	out, err = shoal("rollout", "abort", "fixed")
	if err == nil || !strings.Contains(out, "Succeeded") {
		t.Fatalf("abort of a finished rollout: %v\n%s", err, out)
	}
	must([]string{"cluster/eu1 gitops source set"}, "cluster", "gitops", "set", "eu1", "--url", url, "--branch", "main",
		"--commit", good, "--path", "clusters/eu1", "--secret", "fleet-git", "--prune")
	must([]string{"eu1", "clusters/eu1 commit " + good}, "gitops", "status")
}
