// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store/migrate"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// JobsRunningRelease is the commit TestUpgradeWithJobsRunning upgrades
// from: on main, after member pods moved to per-cluster namespaces and
// records got versions (the recovered submission of session 6, as
// committed in session 7).
const JobsRunningRelease = "eae0dc4b241876cff8999f96273a7cea27933061"

// TestUpgradeWithJobsRunning is the rolling upgrade with jobs running,
// from JobsRunningRelease (a commit of main whose member pods already live
// in per-cluster namespaces) to this checkout. It runs the hub and agents
// of JobsRunningRelease on two KWOK clusters of 16 GPUs, leaves five jobs in
// every state (two running, one pending for lack of room, one succeeded,
// one cancelled), then replaces the hub by this checkout's on the same
// data directory and the agents one at a time, while sampling every 250 ms
// that the running jobs keep exactly their pods. It checks that every
// stored record of the previous release loads, that the running jobs keep
// running with no member created twice, that the pending one is placed
// once room frees up, that the finished ones are kept, that the upgraded
// agents run new members, and finally that the previous release's hub, put
// back on the data directory, reads what this release wrote.
func TestUpgradeWithJobsRunning(t *testing.T) {
	skipShort(t)
	start := time.Now()
	old, cur, f, hub, pods := startOldFleet(t, JobsRunningRelease)

	// The previous release's state: every phase a job can be stored in.
	gang := finishedJobs(t, hub, pods)
	hub.submit(t, gang("run-a", 1)) // 8 GPUs on one cluster
	waitPhase(t, hub, "run-a", v1alpha1.JobRunning)
	hub.submit(t, gang("run-b", 2)) // the whole other cluster
	waitPhase(t, hub, "run-b", v1alpha1.JobRunning)
	hub.submit(t, gang("queued", 2)) // no cluster has 16 GPUs free
	waitWhy(t, hub, "queued")
	sizes := map[string]int{"run-a": 1, "run-b": 2}

	steady := newSteady(pods)
	for job, n := range sizes {
		if err := steady.watch(t.Context(), job, n); err != nil {
			t.Fatal(err)
		}
	}
	sctx, stopSampling := context.WithCancel(t.Context())
	sampled := make(chan struct{})
	go func() { steady.run(sctx); close(sampled) }()
	defer func() { stopSampling(); <-sampled }()

	// Stop the old hub and read its data directory with this release's code.
	hubCluster := f.Hub()
	oldHub := hubProcess(t, f)
	if err := oldHub.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	records := hubRecords(t, f.Shoal.DataDir)
	total := 0
	for _, recs := range records {
		total += len(recs)
	}
	if len(records["jobs"]) != 5 || len(records["clusters"]) != 2 || len(records["reservations"]) != 2 {
		t.Fatalf("previous release stored %d jobs, %d clusters, %d reservations; want 5, 2, 2",
			len(records["jobs"]), len(records["clusters"]), len(records["reservations"]))
	}
	t.Logf("%d records of %d kinds of %s decode with this release's schema", total, len(records), JobsRunningRelease[:7])

	// The new hub on the same data directory.
	if _, err := f.Replace(hubCluster, devfleet.HubProcess, cur.HubBinary, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	upgraded := time.Now()
	waitReady(t, f.Shoal.HTTP)
	t.Logf("hub of this release ready %s after it started", time.Since(upgraded).Round(100*time.Millisecond))
	jobs, err := hub.listJobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1alpha1.JobPhase{"done-ok": v1alpha1.JobSucceeded, "done-cancel": v1alpha1.JobCancelled,
		"run-a": v1alpha1.JobRunning, "run-b": v1alpha1.JobRunning, "queued": v1alpha1.JobPending}
	for name, phase := range want {
		j := jobs[name]
		if j == nil {
			t.Errorf("job %s is gone after the upgrade", name)
			continue
		}
		if j.Status.Phase != phase {
			t.Errorf("job %s is %s after the upgrade, want %s", name, j.Status.Phase, phase)
		}
		if err := checkJob(name, j); err != nil {
			t.Error(err)
		}
	}
	epochs := map[string]int64{"run-a": jobs["run-a"].Status.Epoch, "run-b": jobs["run-b"].Status.Epoch}
	// Long enough for the new leader to reconcile every running job and
	// run scheduling cycles: nothing of them may change, and the pending
	// job may not take GPUs the running ones hold.
	keepRunning(t, hub, pods, epochs, 20*time.Second)
	if j, err := hub.job(t.Context(), "queued"); err != nil || j.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("queued job while the fleet is full: %v (%v)", j.Status.Phase, err)
	}

	// Room frees up: the queued job is placed by the new hub.
	steady.forget("run-a")
	succeed(t, pods, "run-a")
	waitPhase(t, hub, "run-a", v1alpha1.JobSucceeded)
	waitPhase(t, hub, "queued", v1alpha1.JobRunning)
	if err := steady.watch(t.Context(), "queued", 2); err != nil {
		t.Fatal(err)
	}
	delete(epochs, "run-a")
	epochs["queued"] = mustJob(t, hub, "queued").Status.Epoch

	// The agents, one at a time, with run-b and queued running.
	for _, c := range f.Workloads() {
		replaced := time.Now()
		if _, err := f.Replace(c, devfleet.AgentProcess, cur.AgentBinary, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		waitClusterReady(t, f, hub, c.Name)
		t.Logf("agent of %s upgraded: Ready again after %s", c.Name, time.Since(replaced).Round(100*time.Millisecond))
		keepRunning(t, hub, pods, epochs, 5*time.Second)
	}

	// The upgraded agents run new members.
	steady.forget("queued")
	hub.cancel(t, "queued")
	waitPhase(t, hub, "queued", v1alpha1.JobCancelled)
	hub.submit(t, gang("after", 2))
	waitPhase(t, hub, "after", v1alpha1.JobRunning)
	if err := steady.watch(t.Context(), "after", 2); err != nil {
		t.Fatal(err)
	}
	delete(epochs, "queued")
	epochs["after"] = mustJob(t, hub, "after").Status.Epoch
	keepRunning(t, hub, pods, epochs, 2*time.Second)

	stopSampling()
	<-sampled
	samples, problems := steady.report()
	for _, p := range problems {
		t.Error(p)
	}
	if samples < 40 {
		t.Errorf("only %d samples of the running jobs' pods", samples)
	}
	t.Logf("%d samples of the running jobs' pods across the upgrade, %d changes", samples, len(problems))

	// What the new hub wrote carries the current version; what it never rewrote is
	// still the previous release's and loads all the same.
	afterPods, err := pods.of(t.Context(), "after")
	if err != nil {
		t.Fatal(err)
	}
	if err := hubProcess(t, f).Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, r := range hubRecords(t, f.Shoal.DataDir)["jobs"] {
		switch {
		case r.name == "after" && r.version != migrate.For("jobs").Version():
			t.Errorf("job %s submitted to this release is stored at version %d, want %d", r.name, r.version, migrate.For("jobs").Version())
		case r.name == "queued" && r.version != migrate.For("jobs").Version():
			t.Errorf("job %s placed by this release is stored at version %d, want %d", r.name, r.version, migrate.For("jobs").Version())
		}
	}

	// Back one release: the previous release's hub reads what this one
	// wrote (docs/upgrades.md, the rule every step keeps), so replicas of
	// both can share the store during a rolling upgrade.
	if _, err := f.Replace(hubCluster, devfleet.HubProcess, old.HubBinary, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitReady(t, f.Shoal.HTTP)
	if jobs, err = hub.listJobs(t.Context()); err != nil {
		t.Fatal(err)
	}
	want["run-a"], want["queued"], want["after"] = v1alpha1.JobSucceeded, v1alpha1.JobCancelled, v1alpha1.JobRunning
	for name, phase := range want {
		if j := jobs[name]; j == nil {
			t.Errorf("previous release's hub on this release's records: job %s is gone", name)
		} else if j.Status.Phase != phase {
			t.Errorf("previous release's hub on this release's records: job %s is %s, want %s", name, j.Status.Phase, phase)
		}
	}
	keepRunning(t, hub, pods, map[string]int64{"after": epochs["after"]}, 10*time.Second)
	if got, err := pods.of(t.Context(), "after"); err != nil || !maps.Equal(got, afterPods) {
		t.Errorf("job after under the previous release's hub has pods [%v], had [%v] (%v)", got, afterPods, err)
	}
	t.Logf("upgrade test done in %s", time.Since(start).Round(time.Second))
}
