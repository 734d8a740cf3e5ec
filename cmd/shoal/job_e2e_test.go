// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/internal/freeport"
)

// startHub builds and starts shoal-hub with embedded etcd in a temporary
// directory and returns the admin config it writes.
func startHub(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs shoal-hub")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "shoal-hub")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/shoal-dev/shoal/cmd/shoal-hub").CombinedOutput(); err != nil {
		t.Fatalf("build shoal-hub: %v\n%s", err, out)
	}
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	config := filepath.Join(dir, "config")
	ctx, cancel := context.WithCancel(context.Background())
	hub := exec.CommandContext(ctx, bin, "--data-dir", filepath.Join(dir, "data"), "--listen", grpcAddr,
		"--http-listen", httpAddr, "--admin-config", config, "--finished-job-sweep-interval", "500ms")
	var log bytes.Buffer
	hub.Stdout, hub.Stderr = &log, &log
	if err := hub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = hub.Wait()
		if t.Failed() {
			t.Logf("shoal-hub log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if _, serr := os.Stat(config); resp.StatusCode == http.StatusOK && serr == nil {
				return config
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("shoal-hub not ready within 60s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond) // poll readiness
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// shoal runs the CLI in process with args and stdin; it returns stdout and the error.
func shoal(t *testing.T, config, stdin string, args ...string) (string, error) {
	t.Helper()
	return shoalCtx(context.Background(), config, stdin, args...)
}

// shoalCtx is shoal with a context, for commands that run until it ends.
func shoalCtx(ctx context.Context, config, stdin string, args ...string) (string, error) {
	globalHubFlags = hubFlags{}
	root := &cobra.Command{Use: "shoal", SilenceUsage: true, SilenceErrors: true}
	addHubCommands(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	if len(args) > 0 && args[0] == cobra.ShellCompRequestCmd {
		// shell completion: the flags go with the completed command
		n := len(args)
		args = append(append(args[:n-1:n-1], "--config", config), args[n-1])
	} else {
		args = append([]string{"--config", config}, args...)
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// rolesJobYAML is a job with roles whose two roles share a name.
const rolesJobYAML = `apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: dup}
spec:
  queue: research/nlp
  roles:
  - {name: worker, members: 1, gpusPerMember: 8, template: {spec: {containers: [{name: w, image: busybox}]}}}
  - {name: worker, members: 1, gpusPerMember: 8, template: {spec: {containers: [{name: w, image: busybox}]}}}
`

// TestJobAndQueueCommands drives the job and queue commands against a real
// hub: every line a user would type in the quick start, and the refusals.
func TestJobAndQueueCommands(t *testing.T) {
	config := startHub(t)
	jobYAML, err := os.ReadFile("../../examples/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args    []string
		stdin   string
		wantOut string // substring of the output
		wantErr string // substring of the error; "" for success
	}{
		{[]string{"job", "submit", "-f", "-"}, string(jobYAML), "", `queue "research/nlp" does not exist`},
		{[]string{"queue", "create", "research/nlp", "--gpu-quota", "h100=64", "--borrowing-limit", "h100=16", "--weight", "2"},
			"", "queue/research/nlp created", ""},
		{[]string{"queue", "create", "research/nlp"}, "", "", "already exists"},
		{[]string{"queue", "list"}, "", "research/nlp   2        h100=64+16", ""},
		{[]string{"queue", "update", "research/nlp", "--weight", "3", "--gpu-quota", "a100=8", "--borrowing-limit", "h100=0"},
			"", "queue/research/nlp updated", ""},
		{[]string{"queue", "get", "research/nlp"}, "", "research/nlp   3        a100=8,h100=64+0", ""},
		{[]string{"queue", "get", "research/nlp"}, "", "  h100: NVIDIA-H100-80GB-HBM3, ", ""},
		{[]string{"queue", "update", "research/nlp", "--gpu-quota", "h1000=8"}, "", "", "spec.quotas[h1000]: Unsupported value"},
		{[]string{"queue", "update", "research/nlp", "--weight", "0"}, "", "", "nothing to change"},
		{[]string{"queue", "update", "research/nlp", "--weight", "-1"}, "", "", "spec.weight: Invalid value: -1"},
		{[]string{"job", "submit", "-f", "../../examples/job.yaml"}, "", "job/llama-pretrain submitted (Pending in queue research/nlp)", ""},
		{[]string{"job", "submit", "-f", "-"}, string(jobYAML), "job/llama-pretrain unchanged", ""},
		{[]string{"job", "submit", "-f", "-"}, strings.Replace(string(jobYAML), "members: 32", "members: 16", 1), "", "different spec"},
		{[]string{"job", "submit", "-f", "-"}, strings.Replace(string(jobYAML), "members: 32", "members: 0", 1), "",
			"spec.gang.members: Invalid value: 0: must be at least 1"},
		{[]string{"job", "submit", "-f", "-"}, strings.Replace(string(jobYAML), "gpusPerMember", "gpusPerMembr", 1), "",
			`unknown field "spec.gang.gpusPerMembr"`},
		{[]string{"job", "submit", "--dry-run", "-f", "../../examples/job-small.yaml"}, "", "job/eval-mig is valid (dry run", ""},
		{[]string{"job", "submit", "--dry-run", "-f", "../../examples/job-launcher-workers.yaml"}, "", "job/mpi-allreduce is valid (dry run", ""},
		{[]string{"job", "submit", "--dry-run", "-f", "-"}, rolesJobYAML, "", "spec.roles[1].name: Duplicate value"},
		{[]string{"job", "list", "--queue", "research/nlp", "--phase", "Pending", "-o", "wide"}, "", "rack (prefer nvlink)", ""},
		{[]string{"job", "list", "--phase", "Sleeping"}, "", "", "unknown phase"},
		{[]string{"job", "get", "eval-mig"}, "", "", `job "eval-mig" not found`},
		{[]string{"job", "get", "llama-pretrain", "-o", "json"}, "", `"phase": "Pending"`, ""},
		{[]string{"job", "describe", "llama-pretrain"}, "", "Admitted   True     Queued", ""},
		{[]string{"watch"}, "", "llama-pretrain   research/nlp   Pending", ""},
		{[]string{cobra.ShellCompRequestCmd, "job", "describe", "lla"}, "", "llama-pretrain\n", ""},
		{[]string{cobra.ShellCompRequestCmd, "queue", "delete", "research/"}, "", "research/nlp\n", ""},
		{[]string{"queue", "delete", "research/nlp"}, "", "", "still has 1 job(s)"},
		{[]string{"queue", "delete", "research"}, "", "", "child queues"},
		{[]string{"job", "delete", "llama-pretrain"}, "", "", "is Pending, not finished; cancel it first"},
		{[]string{"job", "cancel", "llama-pretrain"}, "", "job/llama-pretrain Cancelled", ""},
		{[]string{"job", "cancel", "llama-pretrain"}, "", "job/llama-pretrain Cancelled", ""},
		{[]string{"job", "list", "--owner", "admin", "--phase", "Cancelled"}, "", "llama-pretrain", ""},
		{[]string{"job", "delete", "llama-pretrain"}, "", "job/llama-pretrain deleted", ""},
		{[]string{"job", "get", "llama-pretrain"}, "", "", `job "llama-pretrain" not found`},
		{[]string{"queue", "delete", "research/nlp", "research"}, "", "queue/research deleted", ""},
		{[]string{"queue", "list", "-o", "yaml"}, "", "items: []", ""},
	}
	for i, s := range steps {
		var out string
		var err error
		if s.args[0] == "watch" {
			// replay the history of llama-pretrain for 3 seconds
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			out, err = shoalCtx(ctx, config, "", "job", "watch", "--revision", "1", "llama-pretrain")
			cancel()
		} else {
			out, err = shoal(t, config, s.stdin, s.args...)
		}
		name := fmt.Sprintf("step %d: shoal %s", i, strings.Join(s.args, " "))
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("%s: %v\n%s", name, err, out)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Fatalf("%s: error %v, want one mentioning %q\n%s", name, err, s.wantErr, out)
		case !strings.Contains(out, s.wantOut):
			t.Fatalf("%s: output lacks %q:\n%s", name, s.wantOut, out)
		}
	}
}
