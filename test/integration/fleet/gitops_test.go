// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestUpWithGitOps starts a fleet with shoal-gitserver: every workload cluster
// must have synced its overlay of the fleet repository at the branch head
// (namespace, GPU quota and priority class in the cluster, labelled with the
// cluster's name by its overlay), and Down must stop the Git server too.
func TestUpWithGitOps(t *testing.T) {
	skipShort(t)
	bins := *buildShoal(t)
	bins.GitServerBinary = buildGitServer(t, filepath.Dir(bins.HubBinary))
	dir := t.TempDir()
	opts := devfleet.Options{Dir: dir, Clusters: 2, Profiles: []string{"hgx-h100", "a100-mig"}, Nodes: 4,
		Out: testWriter{t}, DieWithParent: true, Shoal: &bins}
	f, err := devfleet.Up(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	loaded, err := devfleet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := loaded.Shoal.GitOps
	if g == nil {
		t.Fatal("state records no Git server")
	}
	head := branchHead(t, g.Repo, g.Branch)
	statuses, err := loaded.GitOpsStatuses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loaded.Workloads() {
		s := statuses[c.Name]
		if s == nil || s.AppliedCommit != head || s.Health != "Healthy" || s.InventorySize != 3 {
			t.Errorf("cluster %s: gitops status %+v, want commit %s applied, Healthy, 3 objects", c.Name, s, head)
		}
		cs := clientFor(t, c)
		q, err := cs.CoreV1().ResourceQuotas(devfleet.FleetNamespace).Get(t.Context(), "gpu-quota", metav1.GetOptions{})
		if err != nil {
			t.Errorf("cluster %s: %v", c.Name, err)
			continue
		}
		if got := q.Spec.Hard["requests.nvidia.com/gpu"]; got.String() != "64" || q.Labels[devfleet.LabelFleetCluster] != c.Name {
			t.Errorf("cluster %s: quota %s labels %v, want 64 and the overlay's label", c.Name, got.String(), q.Labels)
		}
		if _, err := cs.SchedulingV1().PriorityClasses().Get(t.Context(), "fleet-batch", metav1.GetOptions{}); err != nil {
			t.Errorf("cluster %s: priority class: %v", c.Name, err)
		}
	}
	var server *devfleet.Process
	for _, p := range loaded.Hub().Processes {
		if p.Name == devfleet.GitServerProcess {
			server = p
		}
	}
	if server == nil || !server.Alive() {
		t.Fatalf("no running %s in the state file", devfleet.GitServerProcess)
	}
	if err := loaded.Down(); err != nil {
		t.Fatal(err)
	}
	if running(server.Pid) {
		t.Errorf("%s (pid %d) still running after Down", server.Name, server.Pid)
	}
}

// branchHead lists the remote's refs and returns branch's commit.
func branchHead(t *testing.T, url, branch string) string {
	t.Helper()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(t.Context(), &git.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Name().Short() == branch {
			return r.Hash().String()
		}
	}
	t.Fatalf("%s has no branch %s", url, branch)
	return ""
}

var (
	gitServerOnce sync.Once
	gitServerBin  string
	gitServerErr  error
)

// buildGitServer builds shoal-gitserver from this checkout into out (the
// directory of the other shoal binaries, removed by TestMain), once per test binary.
func buildGitServer(t *testing.T, out string) string {
	t.Helper()
	gitServerOnce.Do(func() {
		if gitServerBin, gitServerErr = filepath.Abs(filepath.Join(out, "shoal-gitserver")); gitServerErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", gitServerBin, "./cmd/shoal-gitserver")
		cmd.Dir = filepath.Join("..", "..", "..")
		if b, err := cmd.CombinedOutput(); err != nil {
			gitServerErr = fmt.Errorf("go build: %w\n%s", err, b)
		}
	})
	if gitServerErr != nil {
		t.Fatal(gitServerErr)
	}
	return gitServerBin
}
