// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestGangInOneClusterCompletesRendezvous: four members of 2 GPUs on one
// cluster's real node find each other by MASTER_ADDR and each prints the
// whole world, read from the hub. By default a member runs one process per
// GPU, so the world has 4 × 2 ranks.
func TestGangInOneClusterCompletesRendezvous(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	submitJob(t, "realnodes", rendezvousJob("rdv-one", 4, 2, 1, nil, ""))
	j := waitPhase(t, "rdv-one", v1alpha1.JobSucceeded, 3*time.Minute)
	clusters := map[string]int{}
	for _, m := range j.Status.Members {
		clusters[m.Cluster]++
	}
	if len(clusters) != 1 {
		t.Fatalf("members over %v, want one cluster", clusters)
	}
	pods := hubMemberPods(t, "rdv-one")
	if len(pods) != 4 {
		t.Fatalf("%d member pods on the hub, want 4", len(pods))
	}
	for _, p := range pods {
		checkWorld(t, "rdv-one", p.Name, hubLogs(t, p.Name), 4, 2)
	}
}

// TestGangSplitOverTwoClustersCompletesRendezvous: 4 members of 4 GPUs fit
// only as 2 + 2 over the two clusters' 8-GPU real nodes; members in either
// cluster resolve rank 0's name and reach it across clusters. The job asks
// for one process per member, so the world has 4 ranks.
func TestGangSplitOverTwoClustersCompletesRendezvous(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	submitJob(t, "realnodes", rendezvousJob("rdv-split", 4, 4, 2, nil, "  rendezvous: {processesPerMember: 1}\n"))
	j := waitPhase(t, "rdv-split", v1alpha1.JobSucceeded, 3*time.Minute)
	clusters := map[string]int{}
	for _, m := range j.Status.Members {
		clusters[m.Cluster]++
	}
	if len(clusters) != 2 || clusters[clusterNames[0]] != 2 || clusters[clusterNames[1]] != 2 {
		t.Fatalf("members over %v, want 2 + 2", clusters)
	}
	for _, p := range hubMemberPods(t, "rdv-split") {
		checkWorld(t, "rdv-split", p.Name, hubLogs(t, p.Name), 4, 1)
	}
}

// TestWrongWorldSizeFailsTheGang: a member told the world has 5 ranks when
// the gang has 4 waits in vain and exits non-zero; a failing container is a
// failing member, so the job restarts the whole gang once (maxRestarts 1)
// and then fails.
func TestWrongWorldSizeFailsTheGang(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	// The timeout leaves a member time to resolve rank 0's name first: with
	// 5 s, on a loaded machine, a member could still be waiting for the
	// cluster's DNS to know rank 0 when it gave up, and its log said only
	// that (CI, session 21).
	submitJob(t, "realnodes", rendezvousJob("rdv-wrong", 2, 1, 1, []string{"--world-size=3", "--timeout=20s"},
		"  failurePolicy: {maxRestarts: 1}\n"))
	j := waitPhase(t, "rdv-wrong", v1alpha1.JobFailed, 3*time.Minute)
	if j.Status.Restarts != 1 {
		t.Fatalf("restarts = %d, want 1 (one whole-gang restart, then Failed)", j.Status.Restarts)
	}
	var msgs []string
	for _, c := range j.Status.Conditions {
		msgs = append(msgs, c.Reason+": "+c.Message)
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "failed") {
		t.Fatalf("conditions do not say a member failed: %v", msgs)
	}
	// The failed member is kept (--finished-member-retention): its log,
	// read from the hub, says what it waited for — the master "2 of 3 ranks
	// joined …; missing ranks", another rank "the master waits for all 3
	// ranks" (which member fails first varies; running ones are stopped).
	var logs []string
	for _, p := range settledMemberPods(t, "rdv-wrong", time.Minute) {
		logs = append(logs, hubLogs(t, p.Name))
	}
	if all := strings.Join(logs, "\n"); len(logs) == 0 || !strings.Contains(all, "3 ranks") {
		t.Fatalf("no kept member log says the world of 3 never completed:\n%s", all)
	}
}
