// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// lose sets the registry's record of cluster name to Lost, as its liveness
// sweep does after the fence timeout plus the margin.
func (r *rig) lose(name string) { r.T.Helper(); r.setState(name, v1alpha1.ClusterLost) }

// setState sets the registry's record of cluster name to state.
func (r *rig) setState(name string, state v1alpha1.ClusterState) {
	r.T.Helper()
	clusters := store.NewCollection(r.Store, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	_, _, err := clusters.GuaranteedUpdate(r.Ctx, name, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
		c.Status.State = state
		return c, nil
	})
	if err != nil {
		r.T.Fatal(err)
	}
}

// TestLostClusterReschedulesGangWithoutRestart: with onClusterLoss
// Reschedule, a running gang on a Lost cluster is aborted with reason
// ClusterLost, its members there are force-deleted (grace 0, not the 45 s
// preemption grace: the agent has fenced itself), and it is requeued at
// once without a restart counted, then placed on the other cluster.
func TestLostClusterReschedulesGangWithoutRestart(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Cluster("us1", node("c", "r", 0), node("d", "r", 0))
	j := r.running("llama")
	from := j.Status.Members[0].Cluster
	r.lose(from)
	graces := r.deleteGraces()
	r.pass()
	j = r.Job("llama")
	dd := jobs.DispatchOf(j)
	if dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonClusterLost || !strings.Contains(dd.Message, from) {
		t.Fatalf("dispatch %+v, want Aborting/%s naming %s", dd, v1alpha1.ReasonClusterLost, from)
	}
	if c := cond(j, v1alpha1.JobConditionDispatched); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.HasPrefix(c.Message, v1alpha1.ReasonClusterLost+": ") {
		t.Fatalf("dispatched condition %+v", c)
	}
	if len(*graces) != 2 || (*graces)[0] != 0 || (*graces)[1] != 0 {
		t.Fatalf("members on the Lost cluster deleted with graces %v, want both 0", *graces)
	}
	r.pass()
	j = r.Job("llama")
	if j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") || j.Status.Restarts != 0 {
		t.Fatalf("after the teardown: phase %s reserved %v restarts %d", j.Status.Phase, r.reserved("llama"), j.Status.Restarts)
	}
	if c := cond(j, v1alpha1.JobConditionPlaced); c == nil || c.Reason != v1alpha1.ReasonClusterLost {
		t.Fatalf("placed condition %+v", c)
	}
	if _, ok := jobs.NotBefore(j); ok {
		t.Fatal("a cluster loss is requeued with backoff")
	}
	if res := r.cycle(); len(res.Placed) != 1 {
		t.Fatalf("not placed again: %+v", res)
	}
	for _, m := range r.Job("llama").Status.Members {
		if m.Cluster == from {
			t.Fatalf("placed again on the Lost cluster %s", from)
		}
	}
}

// TestLostClusterFailsJobWhenPolicySaysFail: with onClusterLoss Fail the
// job fails with reason ClusterLost on its Finished condition.
func TestLostClusterFailsJobWhenPolicySaysFail(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8, func(j *v1alpha1.Job) { j.Spec.FailurePolicy.OnClusterLoss = v1alpha1.Fail })
	r.cycle()
	r.pass()
	r.agent("llama", -1, "")
	r.pass()
	r.agent("llama", -1, corev1.PodRunning)
	r.pass()
	r.lose("eu1")
	r.pass()
	if dd := jobs.DispatchOf(r.Job("llama")); dd == nil || dd.Phase != v1alpha1.DispatchFailing || dd.Reason != v1alpha1.ReasonClusterLost {
		t.Fatalf("dispatch %+v, want Failing/%s", dd, v1alpha1.ReasonClusterLost)
	}
	r.pass()
	j := r.Job("llama")
	if j.Status.Phase != v1alpha1.JobFailed || r.reserved("llama") {
		t.Fatalf("phase %s reserved %v, want Failed and released", j.Status.Phase, r.reserved("llama"))
	}
	if c := cond(j, v1alpha1.JobConditionFinished); c == nil || c.Reason != v1alpha1.ReasonClusterLost || !strings.Contains(c.Message, "eu1") {
		t.Fatalf("finished condition %+v", c)
	}
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left", n)
	}
}

// TestFencedMemberReschedulesWithoutRestart: a member its agent reported
// Failed with reason Fenced (the hub cluster still hears the agent) moves
// the gang like a cluster loss, not as a restart.
func TestFencedMemberReschedulesWithoutRestart(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.running("llama")
	p := r.pods("llama")[0]
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, v1alpha1.ReasonFenced, "cut off"
	if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.pass()
	if dd := jobs.DispatchOf(r.Job("llama")); dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonClusterLost {
		t.Fatalf("dispatch %+v, want Aborting/%s", dd, v1alpha1.ReasonClusterLost)
	}
	r.pass()
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobPending || j.Status.Restarts != 0 {
		t.Fatalf("phase %s restarts %d, want Pending with no restart (it had none left)", j.Status.Phase, j.Status.Restarts)
	}
}

// TestNotReadyClusterMovesOnlyAtLeastOnceGangs: a NotReady cluster (its
// agent may still run the members until it fences) leaves an AtMostOnce
// gang alone; an AtLeastOnce gang is moved at once, its members there
// force-deleted, without a restart counted.
func TestNotReadyClusterMovesOnlyAtLeastOnceGangs(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Cluster("us1", node("c", "r", 0), node("d", "r", 0))
	j := r.running("llama")
	from := j.Status.Members[0].Cluster
	r.setState(from, v1alpha1.ClusterNotReady)
	r.pass()
	if dd := jobs.DispatchOf(r.Job("llama")); dd == nil || dd.Phase != v1alpha1.DispatchCommitted {
		t.Fatalf("an AtMostOnce gang on a NotReady cluster: dispatch %+v, want still Committed", dd)
	}
	if n := len(r.pods("llama")); n != 2 {
		t.Fatalf("an AtMostOnce gang on a NotReady cluster lost members: %d left", n)
	}

	r.setState(from, v1alpha1.ClusterReady)
	r.Submit("fast", 2, 8, func(j *v1alpha1.Job) { j.Spec.RunPolicy = v1alpha1.AtLeastOnce })
	r.cycle()
	r.pass()
	r.agent("fast", -1, "")
	r.pass()
	r.agent("fast", -1, corev1.PodRunning)
	r.pass()
	fj := r.Job("fast")
	if fj.Status.Phase != v1alpha1.JobRunning {
		t.Fatalf("fast not running: %s", fj.Status.Phase)
	}
	at := fj.Status.Members[0].Cluster
	r.setState(at, v1alpha1.ClusterNotReady)
	graces := r.deleteGraces()
	r.pass()
	dd := jobs.DispatchOf(r.Job("fast"))
	if dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonClusterLost || !strings.Contains(dd.Message, "AtLeastOnce") {
		t.Fatalf("an AtLeastOnce gang on a NotReady cluster: dispatch %+v, want Aborting/%s", dd, v1alpha1.ReasonClusterLost)
	}
	if len(*graces) != 2 || (*graces)[0] != 0 || (*graces)[1] != 0 {
		t.Fatalf("members on the NotReady cluster deleted with graces %v, want both 0", *graces)
	}
	r.pass()
	if fj = r.Job("fast"); fj.Status.Phase != v1alpha1.JobPending || fj.Status.Restarts != 0 {
		t.Fatalf("phase %s restarts %d, want Pending with no restart", fj.Status.Phase, fj.Status.Restarts)
	}
}
