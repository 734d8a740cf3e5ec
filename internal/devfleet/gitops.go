// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"encoding/json"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	"strings"
	"time"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// GitServerProcess is the dev Git server's name in the state file (a process
// of the hub cluster, so `down` stops it with the rest).
const GitServerProcess = "shoal-gitserver"

// Fleet repository defaults: one repository, base/ + clusters/<name>/.
const (
	FleetRepo         = "fleet.git"
	FleetBranch       = "main"
	FleetNamespace    = "team-ml"
	gitopsDir         = "gitops"
	gitopsSyncPeriod  = 15 * time.Second
	gitopsReportEvery = 5 * time.Second
)

// GitOpsState is what the state file records about the fleet's Git server.
type GitOpsState struct {
	// Server is the base URL (http://127.0.0.1:PORT, unauthenticated).
	Server string `json:"server"`
	// Repo is the fleet repository's URL; each cluster's path is clusters/<name>.
	Repo string `json:"repo"`
	// Branch is the branch every cluster follows.
	Branch string `json:"branch"`
	// Root holds the bare repositories.
	Root string `json:"root"`
}

// writeFleetRepo writes the fleet repository's first commit into dir: a
// namespace, a GPU ResourceQuota and a PriorityClass in base/, and one
// overlay per workload cluster that labels what it applies LabelFleetCluster=<name>.
func writeFleetRepo(dir string, clusters []*Cluster) error {
	files := map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"resources:\n  - namespace.yaml\n  - quota.yaml\n  - priorityclass.yaml\n",
		"base/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + FleetNamespace + "\n",
		"base/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-quota\n  namespace: " + FleetNamespace +
			"\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"64\"\n",
		"base/priorityclass.yaml": "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: fleet-batch\n" +
			"value: 1000\ndescription: batch jobs of the fleet, from Git\n",
		"README.md": "Fleet repository of `shoal dev up`: base/ is shared, clusters/<name>/ is one cluster's overlay.\n",
	}
	for _, c := range clusters {
		files["clusters/"+c.Name+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"resources:\n  - ../../base\nlabels:\n  - pairs:\n      " + LabelFleetCluster + ": " + c.Name + "\n"
	}
	for p, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startGitServer writes the fleet repository and starts shoal-gitserver as a
// process of the hub cluster, serving it on a loopback port.
func (f *Fleet) startGitServer(ctx context.Context, hub *Cluster) error {
	dir := filepath.Join(f.Dir, gitopsDir)
	// Every up starts from a fresh repository and fresh agent checkouts
	// (down keeps the fleet directory's files for their logs).
	for _, d := range append([]string{dir}, f.gitopsWorkdirs()...) {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	fixture, addrFile := filepath.Join(dir, "initial"), filepath.Join(dir, "server-url")
	if err := writeFleetRepo(fixture, f.Workloads()); err != nil {
		return fmt.Errorf("fleet repository: %w", err)
	}
	root := filepath.Join(dir, "repos")
	args := []string{"--root=" + root, "--init=" + FleetRepo + "=" + fixture, "--branch=" + FleetBranch, "--addr-file=" + addrFile}
	p, err := f.add(hub, GitServerProcess, f.opts.Shoal.GitServerBinary, args)
	if err != nil {
		return err
	}
	var url string
	if err := poll(ctx, 30*time.Second, 50*time.Millisecond, p, func() bool {
		b, err := os.ReadFile(addrFile)
		url = strings.TrimSpace(string(b))
		return err == nil && strings.HasPrefix(url, "http://")
	}); err != nil {
		return fmt.Errorf("%s: %w", GitServerProcess, err)
	}
	f.Shoal.GitOps = &GitOpsState{Server: url, Repo: url + "/" + FleetRepo, Branch: FleetBranch, Root: root}
	f.stepTo("gitserver", 1, "gitops: Git server serving")
	f.progress("gitops: %s serving %s (pid %d)", GitServerProcess, f.Shoal.GitOps.Repo, p.Pid)
	return f.save()
}

// agentGitOpsArgs are the shoal-agent flags that turn GitOps on for c.
func (f *Fleet) agentGitOpsArgs(c *Cluster) []string {
	if f.Shoal == nil || f.Shoal.GitOps == nil {
		return nil
	}
	return []string{"--gitops-workdir=" + filepath.Join(c.Dir, gitopsDir), "--gitops-report-interval=" + gitopsReportEvery.String()}
}

// gitopsWorkdirs are the agents' checkout directories.
func (f *Fleet) gitopsWorkdirs() []string {
	var out []string
	for _, c := range f.Workloads() {
		out = append(out, filepath.Join(c.Dir, gitopsDir))
	}
	return out
}

// setGitOpsSources points every workload cluster at its overlay of the fleet
// repository (what `shoal cluster gitops set` does) and waits until each
// applied the branch head and is healthy.
func (f *Fleet) setGitOpsSources(ctx context.Context, api *hubAPI) error {
	g := f.Shoal.GitOps
	start := time.Now()
	gc := shoalv1.NewGitOpsClient(api.conn)
	for _, c := range f.Workloads() {
		src := v1alpha1.GitOpsSource{URL: g.Repo, Ref: v1alpha1.GitOpsRef{Branch: g.Branch}, Path: "clusters/" + c.Name, Interval: &metav1.Duration{Duration: gitopsSyncPeriod}, Prune: true}
		b, err := json.Marshal(src)
		if err != nil {
			return err
		}
		if _, err := gc.SetSource(ctx, &shoalv1.SetGitOpsSourceRequest{Cluster: c.Name, SourceJson: b}); err != nil {
			return fmt.Errorf("cluster %s: set gitops source: %w", c.Name, err)
		}
	}
	var last map[string]string
	err := poll(ctx, f.opts.Shoal.ReadyTimeout, 250*time.Millisecond, f.process(f.Hub(), HubProcess), func() bool {
		st, err := gitopsStates(ctx, gc)
		if err != nil {
			return false
		}
		last = map[string]string{}
		for _, c := range f.Workloads() {
			s := st[c.Name]
			if s == nil || s.AppliedCommit == "" || s.Health != "Healthy" || s.Message != "" {
				last[c.Name] = fmt.Sprintf("%+v", s)
			}
		}
		return len(last) == 0
	})
	if err != nil {
		return fmt.Errorf("waiting for the clusters to sync from %s: %w (not synced: %v)", g.Repo, err, last)
	}
	f.stepTo("gitsync", 1, "gitops: clusters synced")
	f.progress("gitops: %d clusters synced from %s in %s", len(f.Workloads()), g.Repo, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// gitopsStates maps each cluster to its reported GitOps status (nil when none).
func gitopsStates(ctx context.Context, gc shoalv1.GitOpsClient) (map[string]*v1alpha1.GitOpsStatus, error) {
	resp, err := gc.ListStatus(ctx, &shoalv1.ListGitOpsStatusRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1alpha1.GitOpsStatus{}
	for _, o := range resp.Items {
		var c v1alpha1.Cluster
		if err := json.Unmarshal(o.GetJson(), &c); err != nil {
			return nil, err
		}
		out[c.Name] = c.Status.GitOps
	}
	return out, nil
}

// GitOpsStatuses asks the fleet's hub for every cluster's GitOps status.
func (f *Fleet) GitOpsStatuses(ctx context.Context) (map[string]*v1alpha1.GitOpsStatus, error) {
	if f.Shoal == nil {
		return nil, fmt.Errorf("the fleet in %s runs no shoal-hub", f.Dir)
	}
	api, err := dialHubAPI(f.Shoal.Config)
	if err != nil {
		return nil, err
	}
	defer api.close()
	return gitopsStates(ctx, shoalv1.NewGitOpsClient(api.conn))
}
