// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/rollout"
)

// fleet is a set of agents syncing overlays of one fleet repository, driven
// the way the hub's rollout controller drives them: by pinning commits.
type fleet struct {
	repo   *gitRepo
	agents map[string]*agentEnv
	pinned map[string]string
}

func (f *fleet) pin(t *testing.T, cluster, commit string) {
	t.Helper()
	src := source(f.repo, "clusters/"+cluster)
	src.Ref = v1alpha1.GitOpsRef{Branch: "main", Commit: commit}
	f.pinned[cluster] = commit
	_, _ = f.agents[cluster].sync(t, src) // errors are in the status the hub reads
}

func (f *fleet) observe() map[string]rollout.Observation {
	obs := map[string]rollout.Observation{}
	for name, a := range f.agents {
		st := a.syncer.Status()
		obs[name] = rollout.Observation{GitOps: &st, Ready: true}
	}
	return obs
}

// do carries out a rollout Action.
func (f *fleet) do(t *testing.T, commit string, act rollout.Action) {
	t.Helper()
	for _, c := range act.Pin {
		f.pin(t, c, commit)
	}
	for c, prev := range act.Rollback {
		f.pin(t, c, prev)
	}
}

// TestRolloutBrokenBaseHaltsAtCanary: a commit that breaks the shared base
// is pinned on the canary only; the canary rejects it (nothing applied), the
// rollout halts and pins the canary back, and the second wave is never
// touched. A fixed commit then rolls out wave by wave after the soak.
func TestRolloutBrokenBaseHaltsAtCanary(t *testing.T) {
	integration(t)
	repo := newRepoFromDir(t, "../../testdata/gitops/fleet")
	f := &fleet{repo: repo, agents: map[string]*agentEnv{}, pinned: map[string]string{}}
	good := repo.head(t)
	for _, c := range []string{"eu1", "us1"} {
		f.agents[c] = newAgent(t, true)
		f.pin(t, c, good)
		if st := f.agents[c].syncer.Status(); !st.Ready() {
			t.Fatalf("%s not Ready at %s: %s", c, good, st.Message)
		}
	}
	steps, err := rollout.ParseWaves("1,100%")
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	bad := repo.push(t, map[string]string{
		"base/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-quota\n  namespace: fleet\nspec:\n  hard:\n    requests.nvidia.com/gpu: sixty-four\n",
	})
	spec := rollout.Spec{Commit: bad, Waves: rollout.Plan([]string{"us1", "eu1"}, steps), Soak: 5 * time.Minute}
	st, act := rollout.Start(spec, map[string]string{"eu1": good, "us1": good}, clock)
	f.do(t, bad, act)
	clock = clock.Add(time.Minute)
	st, act = rollout.Tick(spec, st, f.observe(), clock)
	if st.Phase != rollout.PhaseHalted || act.Rollback["eu1"] != good || len(act.Rollback) != 1 {
		t.Fatalf("broken canary: phase %s (%s), action %+v", st.Phase, st.Message, act)
	}
	wantReason(t, f.agents["eu1"].syncer.Status(), v1alpha1.GitOpsReasonValidationFailed, true)
	t.Logf("rollout halted: %s", st.Message)
	f.do(t, bad, act)
	eu1, us1 := f.agents["eu1"].syncer.Status(), f.agents["us1"].syncer.Status()
	if !eu1.Ready() || eu1.AppliedCommit != good {
		t.Fatalf("canary after rollback: ready %v applied %s", eu1.Ready(), eu1.AppliedCommit)
	}
	if us1.AttemptedCommit != good || f.pinned["us1"] != good {
		t.Fatalf("second wave was touched: attempted %s", us1.AttemptedCommit)
	}

	fixed := repo.push(t, map[string]string{
		"base/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-quota\n  namespace: fleet\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"128\"\n",
	})
	spec.Commit = fixed
	st, act = rollout.Start(spec, map[string]string{"eu1": good, "us1": good}, clock)
	for i := 0; st.Phase == rollout.PhaseProgressing && i < 10; i++ {
		f.do(t, fixed, act)
		clock = clock.Add(3 * time.Minute)
		st, act = rollout.Tick(spec, st, f.observe(), clock)
	}
	if st.Phase != rollout.PhaseSucceeded {
		t.Fatalf("fixed rollout: %s (%s)", st.Phase, st.Message)
	}
	for c, a := range f.agents {
		if got := a.syncer.Status().AppliedCommit; got != fixed {
			t.Fatalf("%s applied %s, want %s", c, got, fixed)
		}
	}
}
