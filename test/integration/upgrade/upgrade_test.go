// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store/migrate"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

const queue = "upgrade"

// TestUpgradeFromPreviousRelease runs the hub and agents of
// PreviousRelease on two KWOK clusters of 16 GPUs and leaves jobs in every
// state the procedure of docs/upgrades.md keeps across this upgrade (one
// succeeded, one cancelled, one drained — cancelled before the upgrade
// after it ran —, one pending that fits nowhere). It then stops the old
// hub and checks that every stored record of the previous release loads
// with this release's schema; replaces the hub by this checkout's on the
// same data directory and checks every job kept its phase; replaces the
// agents one at a time, each cluster Ready again; runs a new gang on the
// upgraded fleet, sampling every 250 ms that it keeps exactly its pods;
// checks that what this release wrote carries its version; and finally
// that the previous release's hub, put back on the data directory, reads
// what this release wrote.
//
// The previous release put member pods in the hub cluster's shoal-jobs
// namespace, this one in one namespace per cluster; a job running across
// the upgrade is therefore not adopted (it is requeued while its old
// members hold their GPUs), and docs/upgrades.md says to drain first.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	skipShort(t)
	start := time.Now()
	old, cur, f, hub, pods := startOldFleet(t, PreviousRelease)

	// The previous release's state: every phase a job can be stored in
	// once the fleet is drained.
	gang := finishedJobs(t, hub, pods)
	hub.submit(t, gang("drained", 2)) // a whole cluster, then drained
	waitPhase(t, hub, "drained", v1alpha1.JobRunning)
	hub.submit(t, gang("queued", 3)) // 24 GPUs in one cluster: fits nowhere
	waitWhy(t, hub, "queued")
	hub.cancel(t, "drained")
	waitPhase(t, hub, "drained", v1alpha1.JobCancelled)

	// Stop the old hub and read its data directory with this release's code.
	hubCluster := f.Hub()
	oldHub := hubProcess(t, f)
	if err := oldHub.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	records := hubRecords(t, f.Shoal.DataDir)
	total := 0
	for kind, recs := range records {
		for _, r := range recs {
			total++
			if r.version != migrate.Legacy {
				t.Errorf("%s/%s of the previous release is at version %d: it had none", kind, r.name, r.version)
			}
		}
	}
	if len(records["jobs"]) != 4 || len(records["clusters"]) != 2 {
		t.Fatalf("previous release stored %d jobs, %d clusters; want 4, 2", len(records["jobs"]), len(records["clusters"]))
	}
	dumpJobs(t, records["jobs"])
	t.Logf("%d records of %d kinds of the previous release decode with this release's schema", total, len(records))

	// The new hub on the same data directory.
	if _, err := f.Replace(hubCluster, devfleet.HubProcess, cur.HubBinary, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	upgraded := time.Now()
	waitReady(t, f.Shoal.HTTP)
	t.Logf("hub of this release ready %s after it started", time.Since(upgraded).Round(100*time.Millisecond))
	want := map[string]v1alpha1.JobPhase{"done-ok": v1alpha1.JobSucceeded, "done-cancel": v1alpha1.JobCancelled,
		"drained": v1alpha1.JobCancelled, "queued": v1alpha1.JobPending}
	checkPhases := func(who string, thisRelease bool) {
		t.Helper()
		jobs, err := hub.listJobs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for name, phase := range want {
			j := jobs[name]
			if j == nil {
				t.Errorf("%s: job %s is gone", who, name)
				continue
			}
			if j.Status.Phase != phase {
				t.Errorf("%s: job %s is %s, want %s", who, name, j.Status.Phase, phase)
			}
			if thisRelease {
				if err := checkJob(name, j); err != nil {
					t.Error(err)
				}
			}
		}
	}
	checkPhases("after the upgrade of the hub", true)

	// The agents, one at a time.
	for _, c := range f.Workloads() {
		replaced := time.Now()
		if _, err := f.Replace(c, devfleet.AgentProcess, cur.AgentBinary, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		waitClusterReady(t, f, hub, c.Name)
		t.Logf("agent of %s upgraded: Ready again after %s", c.Name, time.Since(replaced).Round(100*time.Millisecond))
	}
	if j, err := hub.job(t.Context(), "queued"); err != nil || j.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("queued job, which fits nowhere: %v (%v)", j.Status.Phase, err)
	}

	// The upgraded fleet runs new members, and they stay as they are.
	hub.submit(t, gang("after", 2))
	waitPhase(t, hub, "after", v1alpha1.JobRunning)
	steady := newSteady(pods)
	if err := steady.watch(t.Context(), "after", 2); err != nil {
		t.Fatal(err)
	}
	sctx, stopSampling := context.WithCancel(t.Context())
	sampled := make(chan struct{})
	go func() { steady.run(sctx); close(sampled) }()
	defer func() { stopSampling(); <-sampled }()
	keepRunning(t, hub, pods, map[string]int64{"after": mustJob(t, hub, "after").Status.Epoch}, 15*time.Second)
	stopSampling()
	<-sampled
	samples, problems := steady.report()
	for _, p := range problems {
		t.Error(p)
	}
	if samples < 40 {
		t.Errorf("only %d samples of the running job's pods", samples)
	}
	t.Logf("%d samples of the new job's pods on the upgraded fleet, %d changes", samples, len(problems))
	hub.cancel(t, "after")
	waitPhase(t, hub, "after", v1alpha1.JobCancelled)
	want["after"] = v1alpha1.JobCancelled

	// What the new hub wrote carries the current version; what it never rewrote is
	// still the previous release's and loads all the same.
	if err := hubProcess(t, f).Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, r := range hubRecords(t, f.Shoal.DataDir)["jobs"] {
		if r.name == "after" && r.version != migrate.For("jobs").Version() {
			t.Errorf("job %s submitted to this release is stored at version %d, want %d", r.name, r.version, migrate.For("jobs").Version())
		}
	}

	// Back one release: the previous release's hub reads what this one
	// wrote (docs/upgrades.md, the rule every step keeps).
	if _, err := f.Replace(hubCluster, devfleet.HubProcess, old.HubBinary, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitReady(t, f.Shoal.HTTP)
	checkPhases("previous release's hub on this release's records", false)
	t.Logf("upgrade test done in %s", time.Since(start).Round(time.Second))
}
