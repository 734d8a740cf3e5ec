// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// spanning runs a two-member gang with one member on each of eu1 and us1
// (one 8-GPU node each), both heard now, and returns the index of the
// member on us1.
func (r *rig) spanning(job string) int32 {
	r.T.Helper()
	r.Cluster("eu1", node("a", "r", 0))
	r.Cluster("us1", node("c", "r", 0))
	r.live("eu1", "us1")
	r.Submit(job, 2, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 })
	r.cycle()
	r.pass()
	r.agent(job, -1, "")
	r.pass()
	r.agent(job, -1, corev1.PodRunning)
	r.pass()
	j := r.Job(job)
	if j.Status.Phase != v1alpha1.JobRunning {
		r.T.Fatalf("not running: %s", j.Status.Phase)
	}
	idx := int32(-1)
	for _, m := range j.Status.Members {
		if m.Cluster == "us1" {
			idx = m.Index
		}
	}
	if idx < 0 || len(j.Status.Placement.Clusters) != 2 {
		r.T.Fatalf("gang not on both clusters: %v", j.Status.Placement.Clusters)
	}
	return idx
}

// restartWithCut fails the eu1 member of a spanning gang while us1 is
// silent (cut off), tears the gang down and checks that us1's member hangs,
// terminating, and the reservation is kept; it returns the member on us1.
func (r *rig) restartWithCut(job string) string {
	r.T.Helper()
	cutIdx := r.spanning(job)
	r.gracefulDeletes()
	r.Clock.Step(3 * time.Second)
	r.live("eu1") // us1 is silent from here on
	r.setPhase(job, 1-cutIdx, corev1.PodFailed)
	r.pass() // restart decided, members deleted
	if dd := jobs.DispatchOf(r.Job(job)); dd == nil || dd.Phase != v1alpha1.DispatchRestarting {
		r.T.Fatalf("dispatch %+v, want Restarting", dd)
	}
	cut := v1alpha1.MemberPodName(job, 1, cutIdx)
	for _, p := range r.pods(job) {
		if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0 {
			r.T.Fatalf("member %s not deleted gracefully: %s", p.Name, podState(&p))
		}
		if p.Name != cut { // eu1's agent confirms the end
			if err := r.hub.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name); err != nil {
				r.T.Fatal(err)
			}
		}
	}
	return cut
}

// TestRestartWaitsForCutClusterFence: a member on the healthy cluster fails
// while the gang's other cluster is cut off but not yet Lost. Its member
// there is deleted with a grace, so its hub pod stays until its agent
// confirms; long past grace plus ForceDeleteAfter it is not force-deleted,
// the reservation is kept and no next epoch is placed, since the agent
// behind the cut may still run it until its fence stops it. Once the
// cluster is Lost (its fence has expired) the member is force-deleted and
// the gang restarts.
func TestRestartWaitsForCutClusterFence(t *testing.T) {
	r := newRig(t)
	cut := r.restartWithCut("llama")
	for i := 0; i < 5; i++ {
		r.Clock.Step(time.Minute)
		r.live("eu1")
		r.pass()
		var left []string
		for _, p := range r.pods("llama") {
			left = append(left, p.Name)
		}
		if len(left) != 1 || left[0] != cut {
			t.Fatalf("after %d min: members %v, want only %s hanging", i+1, left, cut)
		}
		if !r.reserved("llama") || r.Job("llama").Status.Phase == v1alpha1.JobPending {
			t.Fatalf("after %d min: released (phase %s) while the cut cluster's member may run", i+1, r.Job("llama").Status.Phase)
		}
		if res := r.cycle(); len(res.Placed) != 0 {
			t.Fatalf("after %d min: next epoch placed: %+v", i+1, res)
		}
	}
	r.lose("us1")
	r.pass() // force-deleted
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left on the Lost cluster", n)
	}
	r.pass() // released, requeued
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") || j.Status.Restarts != 1 {
		t.Fatalf("phase %s reserved %v restarts %d, want Pending, released, 1 restart", j.Status.Phase, r.reserved("llama"), j.Status.Restarts)
	}
}

// TestHangingMemberOfHeardClusterIsForceDeleted: when the hanging member's
// agent reaches the hub after the deletion (the hang is in its own
// cluster), the member is force-deleted once grace plus ForceDeleteAfter
// have passed, not before, and the gang restarts.
func TestHangingMemberOfHeardClusterIsForceDeleted(t *testing.T) {
	r := newRig(t)
	cut := r.restartWithCut("llama")
	// us1's agent is back on the hub, with a request to the hub cluster
	// made after the deletion.
	r.Clock.Step(v1alpha1.HubClusterContactWindow + 2*time.Second)
	r.live("eu1", "us1")
	r.pass()
	if n := len(r.pods("llama")); n != 1 {
		t.Fatalf("%d members, want %s still terminating within ForceDeleteAfter", n, cut)
	}
	r.Clock.Step(31*time.Second - v1alpha1.HubClusterContactWindow)
	r.pass() // force-deleted
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left past ForceDeleteAfter on a heard cluster", n)
	}
	r.pass()
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") {
		t.Fatalf("phase %s reserved %v, want Pending and released", j.Status.Phase, r.reserved("llama"))
	}
}

// TestHangingMemberHeardThroughTheLease: the heartbeat that vouches for
// the hanging member's agent renewed only the cluster's lease (the
// registry rewrites the record only now and then, registry.Lease); the
// dispatcher reads it and force-deletes the member as when the record
// says so.
func TestHangingMemberHeardThroughTheLease(t *testing.T) {
	r := newRig(t)
	cut := r.restartWithCut("llama")
	reg := registry.New(r.Store, nil, registry.Config{Clock: r.Clock})
	beat := func() {
		t.Helper()
		if _, err := reg.Heartbeat(r.Ctx, "us1", "", registry.Beat{ClusterReachable: true, HubClusterReachable: ptr.To(true)}); err != nil {
			t.Fatal(err)
		}
	}
	beat() // at the deletion: no proof; the record is written (its Ready condition is new)
	records := store.NewCollection(r.Store, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	before, _, err := records.Get(r.Ctx, "us1")
	if err != nil {
		t.Fatal(err)
	}
	r.Clock.Step(v1alpha1.HubClusterContactWindow + 2*time.Second)
	beat() // after the deletion and the window: the proof, in the lease only
	after, _, err := records.Get(r.Ctx, "us1")
	if err != nil {
		t.Fatal(err)
	}
	if !after.Status.LastHubClusterContact.Equal(before.Status.LastHubClusterContact) {
		t.Fatalf("the second beat rewrote the record's contact (%v → %v): this test needs it in the lease only",
			before.Status.LastHubClusterContact, after.Status.LastHubClusterContact)
	}
	r.live("eu1")
	r.pass()
	if n := len(r.pods("llama")); n != 1 {
		t.Fatalf("%d members, want %s still terminating within ForceDeleteAfter", n, cut)
	}
	r.Clock.Step(31*time.Second - v1alpha1.HubClusterContactWindow)
	r.pass() // force-deleted
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left past ForceDeleteAfter on a cluster heard through its lease", n)
	}
}

// TestHalfCutClusterWaitsForFence: the hanging member's agent keeps
// beating, but says it cannot reach the hub cluster (it does not see the
// deletion). Its cluster stays Ready, yet the member is not force-deleted
// and no next epoch is placed until no heartbeat has said it reaches the
// hub cluster for the fence timeout plus the margin (the agent has fenced
// itself); then it is force-deleted and the gang restarts. A heartbeat
// that came just after the deletion, within HubClusterContactWindow, is no
// proof either.
func TestHalfCutClusterWaitsForFence(t *testing.T) {
	r := newRig(t)
	cut := r.restartWithCut("llama")
	reg := registry.New(r.Store, nil, registry.Config{Clock: r.Clock})
	// A fully connected beat within the window after the deletion: its
	// request to the hub cluster may predate the deletion.
	r.Clock.Step(time.Second)
	if _, err := reg.Heartbeat(r.Ctx, "us1", "", registry.Beat{ClusterReachable: true, HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	waited := time.Duration(0)
	limit := registry.DefaultFenceTimeout + registry.DefaultFenceMargin
	for waited <= limit {
		r.Clock.Step(10 * time.Second)
		waited += 10 * time.Second
		r.live("eu1")
		c, err := reg.Heartbeat(r.Ctx, "us1", "", registry.Beat{ClusterReachable: true, HubClusterReachable: ptr.To(false)})
		if err != nil {
			t.Fatal(err)
		}
		if c.Status.State != v1alpha1.ClusterReady {
			t.Fatalf("after %s: half-cut cluster %s, want Ready (liveness unchanged)", waited, c.Status.State)
		}
		r.pass()
		if len(r.pods("llama")) == 0 {
			break
		}
		if !r.reserved("llama") {
			t.Fatalf("after %s: released while the half-cut cluster's member may run", waited)
		}
		if res := r.cycle(); len(res.Placed) != 0 {
			t.Fatalf("after %s: next epoch placed: %+v", waited, res)
		}
	}
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%s still hanging after %s", cut, waited)
	}
	if waited <= limit {
		t.Fatalf("%s force-deleted after %s, before the fence timeout plus margin %s", cut, waited, limit)
	}
	c, _, err := reg.GetCluster(r.Ctx, "us1")
	if err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable); cond == nil || cond.Reason != v1alpha1.ReasonHubClusterFenced {
		t.Fatalf("HubClusterReachable %+v, want %s", cond, v1alpha1.ReasonHubClusterFenced)
	}
	r.pass()
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") || j.Status.Restarts != 1 {
		t.Fatalf("phase %s reserved %v restarts %d, want Pending, released, 1 restart", j.Status.Phase, r.reserved("llama"), j.Status.Restarts)
	}
}
