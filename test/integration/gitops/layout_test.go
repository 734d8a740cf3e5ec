// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestFleetRepositoryLayout syncs two clusters from one fleet repository
// (shared base/, clusters/<name>/ overlays), then breaks only us1's overlay:
// us1 reports the error and keeps its state, eu1 applies the same commit.
func TestFleetRepositoryLayout(t *testing.T) {
	integration(t)
	repo := newRepoFromDir(t, "../../testdata/gitops/fleet")
	eu1, us1 := newAgent(t, true), newAgent(t, true)
	eu1.syncOK(t, source(repo, "clusters/eu1"))
	us1.syncOK(t, source(repo, "clusters/us1"))
	for _, c := range []string{"eu1", "us1"} {
		cm := configMap(t, "fleet-"+c, "gpu-settings")
		if cm == nil || cm.Data["cluster"] != c || cm.Data["mig-strategy"] != "single" {
			t.Fatalf("overlay %s: gpu-settings = %+v", c, cm)
		}
	}

	head := repo.push(t, map[string]string{
		"base/gpu-settings.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpu-settings\n  namespace: fleet\ndata:\n  mig-strategy: mixed\n  time-slicing: \"off\"\n",
		"clusters/us1/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: fleet-us1\nresources:\n  - ../../base\n  - gone.yaml\n",
	})
	st := eu1.syncOK(t, source(repo, "clusters/eu1"))
	if !v1alpha1.SameCommit(st.AppliedCommit, head) || configMap(t, "fleet-eu1", "gpu-settings").Data["mig-strategy"] != "mixed" {
		t.Fatalf("eu1 did not apply %s: %+v", head, st)
	}
	st, err := us1.sync(t, source(repo, "clusters/us1"))
	if err == nil {
		t.Fatal("us1 synced a broken overlay")
	}
	wantReason(t, st, v1alpha1.GitOpsReasonBuildFailed, true)
	if configMap(t, "fleet-us1", "gpu-settings").Data["mig-strategy"] != "single" {
		t.Fatal("us1 changed although its overlay is broken")
	}
}

// TestRepositoryPerClusterLayout syncs a repository of plain YAML files with
// no kustomization.yaml; cluster-scoped objects are applied too.
func TestRepositoryPerClusterLayout(t *testing.T) {
	integration(t)
	repo := newRepoFromDir(t, "../../testdata/gitops/single")
	a := newAgent(t, true)
	st := a.syncOK(t, source(repo, ""))
	if st.InventorySize != 3 || configMap(t, "solo", "settings") == nil {
		t.Fatalf("single repo: inventory %d", st.InventorySize)
	}
	var pc schedulingv1.PriorityClass
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "solo-training"}, &pc); err != nil || pc.Value != 1000 {
		t.Fatalf("priority class: %v %+v", err, pc)
	}
}

// TestPinnedCommitAndTag pins an older commit (what a rollout rollback does)
// and a tag.
func TestPinnedCommitAndTag(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	name := a.ns + "-cm"
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "1"})})
	first := repo.head(t)
	second := repo.push(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "2"})})
	a.syncOK(t, source(repo, ""))
	if configMap(t, "default", name).Data["v"] != "2" {
		t.Fatal("branch head not applied")
	}
	pinned := source(repo, "")
	pinned.Ref = v1alpha1.GitOpsRef{Branch: "main", Commit: first}
	st := a.syncOK(t, pinned)
	if st.AppliedCommit != first || configMap(t, "default", name).Data["v"] != "1" {
		t.Fatalf("pin to %s: applied %s", first, st.AppliedCommit)
	}
	pinned.Ref = v1alpha1.GitOpsRef{Commit: second}
	if st = a.syncOK(t, pinned); st.AppliedCommit != second {
		t.Fatalf("pin to %s without branch: applied %s", second, st.AppliedCommit)
	}
	repo.tag(t, "v2")
	third := repo.push(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "3"})})
	tagged := source(repo, "")
	tagged.Ref = v1alpha1.GitOpsRef{Tag: "v2"}
	if st = a.syncOK(t, tagged); st.AppliedCommit != second || st.Revision != "v2@sha1:"+second {
		t.Fatalf("tag v2: applied %s (%s), want %s; head is %s", st.AppliedCommit, st.Revision, second, third)
	}
}

// TestRunReportsStatus runs the Syncer loop: SetSource starts a sync whose
// status reaches OnStatus; Trigger after a push applies the new head.
func TestRunReportsStatus(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	name := a.ns + "-cm"
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "1"})})
	statuses := make(chan v1alpha1.GitOpsStatus, 64)
	s := a.syncer
	s.SetOnStatus(func(st v1alpha1.GitOpsStatus) {
		select {
		case statuses <- st:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	src := source(repo, "")
	src.Interval = &metav1.Duration{Duration: time.Hour}
	if err := s.SetSource(src); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, statuses, repo.head(t))
	head := repo.push(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "2"})})
	s.Trigger()
	waitApplied(t, statuses, head)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}

func waitApplied(t *testing.T, statuses <-chan v1alpha1.GitOpsStatus, commit string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case st := <-statuses:
			if st.Ready() && v1alpha1.SameCommit(st.AppliedCommit, commit) {
				return
			}
		case <-timeout:
			t.Fatalf("no Ready status for %s within a minute", commit)
		}
	}
}

// TestRunCorrectsDriftOnInterval: with Run looping on a short interval, a
// hand edit of an applied object is reverted without any Trigger.
func TestRunCorrectsDriftOnInterval(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	name := a.ns + "-cm"
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", name, map[string]string{"v": "git"})})
	src := source(repo, "")
	src.Interval = &metav1.Duration{Duration: 300 * time.Millisecond}
	a.syncOK(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.syncer.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	}()
	cm := configMap(t, "default", name)
	cm.Data["v"] = "hand-edited"
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return configMap(t, "default", name).Data["v"] == "git", nil
	})
	if err != nil {
		t.Fatalf("drift not corrected on the interval within 30s: %v", err)
	}
}
