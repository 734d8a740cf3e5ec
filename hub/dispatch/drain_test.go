// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// running places a two-member gang with a 45 s preemption grace and no
// restart left (maxRestarts 0), and runs it.
func (r *rig) running(job string) *v1alpha1.Job {
	r.T.Helper()
	r.Submit(job, 2, 8, func(j *v1alpha1.Job) {
		g, zero := int64(45), int32(0)
		j.Spec.Preemption.GracePeriodSeconds = &g
		j.Spec.FailurePolicy.MaxRestarts = &zero
	})
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
	return j
}

// live makes the rig's clusters look like clusters whose agent reports
// (a heartbeat now, one that says the agent reaches the hub cluster, and
// an inventory summary), so that the registry keeps them Ready while it
// evaluates a drain.
func (r *rig) live(names ...string) *registry.Registry {
	r.T.Helper()
	clusters := store.NewCollection(r.Store, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	for _, name := range names {
		_, _, err := clusters.GuaranteedUpdate(r.Ctx, name, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
			now := metav1.NewTime(r.Clock.Now())
			c.Status.LastHeartbeat, c.Status.Inventory = &now, &v1alpha1.InventorySummary{Generation: 1}
			c.Status.LastHubClusterContact = &now
			return c, nil
		})
		if err != nil {
			r.T.Fatal(err)
		}
	}
	return registry.New(r.Store, nil, registry.Config{Clock: r.Clock})
}

// deleteGraces records the grace period of every member deletion.
func (r *rig) deleteGraces() *[]int64 {
	var graces []int64
	r.hub.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if g := a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds; g != nil {
			graces = append(graces, *g)
		} else {
			graces = append(graces, -1)
		}
		return false, nil, nil
	})
	return &graces
}

// assertMoved checks a drained gang's teardown pass by pass: the abort
// with reason Drained, every member deleted with the preemption grace,
// then the release and the requeue without backoff or restart.
func (r *rig) assertMoved(job, where string) {
	r.T.Helper()
	graces := r.deleteGraces()
	r.pass() // drain decided, members deleted
	j := r.Job(job)
	dd := jobs.DispatchOf(j)
	if dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonDrained || !strings.Contains(dd.Message, where) {
		r.T.Fatalf("after the drain: dispatch %+v, want Aborting/%s naming %q", dd, v1alpha1.ReasonDrained, where)
	}
	if c := cond(j, v1alpha1.JobConditionDispatched); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.HasPrefix(c.Message, v1alpha1.ReasonDrained+": ") {
		r.T.Fatalf("dispatched condition %+v", c)
	}
	if len(*graces) != 2 || (*graces)[0] != 45 || (*graces)[1] != 45 {
		r.T.Fatalf("members deleted with graces %v, want both 45 (the preemption grace)", *graces)
	}
	if n := len(r.pods(job)); n != 0 {
		r.T.Fatalf("%d members left", n)
	}
	if !r.reserved(job) {
		r.T.Fatal("reservation released in the pass that decided (the job was written)")
	}
	r.pass() // none left: reservation released, job requeued
	j = r.Job(job)
	if j.Status.Phase != v1alpha1.JobPending || r.reserved(job) || j.Status.Restarts != 0 {
		r.T.Fatalf("after the teardown: phase %s reserved %v restarts %d", j.Status.Phase, r.reserved(job), j.Status.Restarts)
	}
	if c := cond(j, v1alpha1.JobConditionPlaced); c == nil || c.Reason != v1alpha1.ReasonDrained || !strings.Contains(c.Message, where) {
		r.T.Fatalf("placed condition %+v", c)
	}
	if _, ok := jobs.NotBefore(j); ok || j.Annotations[v1alpha1.AnnotationAborts] != "" {
		r.T.Fatalf("a drain is requeued without backoff: annotations %v", j.Annotations)
	}
}

// TestClusterDrainMovesGangWithoutRestart: a running gang on a drained
// cluster is torn down whole with its preemption grace, requeued with
// reason Drained and no restart counted (it had none left), and placed on
// the other cluster; the registry then reports the cluster drained.
func TestClusterDrainMovesGangWithoutRestart(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Cluster("us1", node("c", "r", 0), node("d", "r", 0))
	j := r.running("llama")
	from := j.Status.Members[0].Cluster
	reg := r.live("eu1", "us1")
	if _, _, err := reg.Drain(r.Ctx, from); err != nil {
		t.Fatal(err)
	}
	if err := reg.Sweep(r.Ctx); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := reg.GetCluster(r.Ctx, from); drainedCond(c) != metav1.ConditionFalse || c.Status.State != v1alpha1.ClusterDraining {
		t.Fatalf("state %s, conditions %v while the gang is still there", c.Status.State, c.Status.Conditions)
	}
	r.assertMoved("llama", "cluster "+from)
	if res := r.cycle(); len(res.Placed) != 1 {
		t.Fatalf("not placed again: %+v", res)
	}
	j = r.Job("llama")
	for _, m := range j.Status.Members {
		if m.Cluster == from {
			t.Fatalf("member %d placed on the drained cluster %s again", m.Index, from)
		}
	}
	if err := reg.Sweep(r.Ctx); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := reg.GetCluster(r.Ctx, from); drainedCond(c) != metav1.ConditionTrue || c.Status.State != v1alpha1.ClusterCordoned {
		t.Fatalf("state %s, conditions %v with no gang left", c.Status.State, c.Status.Conditions)
	}
	r.pass()
	r.agent("llama", -1, "")
	r.pass()
	r.agent("llama", -1, corev1.PodRunning)
	r.pass()
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobRunning || j.Status.Restarts != 0 || j.Status.Epoch != 2 {
		t.Fatalf("after the move: phase %s restarts %d epoch %d", j.Status.Phase, j.Status.Restarts, j.Status.Epoch)
	}
}

// TestNodeDrainMovesGangOffTheNode: a gang with a member on a drained node
// is moved the same way and placed on other nodes of the same cluster.
func TestNodeDrainMovesGangOffTheNode(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0))
	j := r.running("llama")
	target := j.Status.Members[1].Node
	reg := r.live("eu1")
	if _, _, err := reg.DrainNode(r.Ctx, "eu1", target, true); err != nil {
		t.Fatal(err)
	}
	r.assertMoved("llama", "node "+target+" of cluster eu1")
	r.cycle()
	j = r.Job("llama")
	if j.Status.Phase != v1alpha1.JobPlaced || len(j.Status.Members) != 2 {
		t.Fatalf("not placed again: phase %s %+v", j.Status.Phase, cond(j, v1alpha1.JobConditionPlaced))
	}
	for _, m := range j.Status.Members {
		if m.Node == target {
			t.Fatalf("member %d placed on the drained node %s again", m.Index, target)
		}
	}
}

// TestDrainElsewhereLeavesGangAlone: a drain of another cluster or of a
// node the gang does not use changes nothing.
func TestDrainElsewhereLeavesGangAlone(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0))
	r.Cluster("us1", node("d", "r", 0))
	j := r.running("llama")
	used := map[string]bool{}
	for _, m := range j.Status.Members {
		used[m.Node] = true
	}
	free := "a"
	for _, n := range []string{"a", "b", "c"} {
		if !used[n] {
			free = n
		}
	}
	reg := r.live("eu1", "us1")
	if _, _, err := reg.Drain(r.Ctx, "us1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.DrainNode(r.Ctx, "eu1", free, true); err != nil {
		t.Fatal(err)
	}
	r.pass()
	r.pass()
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobRunning || len(r.pods("llama")) != 2 || !r.reserved("llama") {
		t.Fatalf("gang touched by a drain elsewhere: phase %s, %d members", j.Status.Phase, len(r.pods("llama")))
	}
}

func drainedCond(c *v1alpha1.Cluster) metav1.ConditionStatus {
	if c == nil {
		return ""
	}
	for _, x := range c.Status.Conditions {
		if x.Type == v1alpha1.ClusterConditionDrained {
			return x.Status
		}
	}
	return ""
}

// TestDrainWatchPokesOnDrainChangesOnly: heartbeats (other cluster writes)
// do not poke the dispatcher; a drain, a drained node and an uncordon do.
func TestDrainWatchPokesOnDrainChangesOnly(t *testing.T) {
	ch := make(chan store.WatchEvent[*v1alpha1.Cluster])
	pokes := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		dispatch.NotifyDrains(t.Context(), ch, func() { pokes <- struct{}{} })
	}()
	cl := func(drain bool, nodes ...string) *v1alpha1.Cluster {
		return &v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{Drain: drain, DrainedNodes: nodes}}
	}
	for i, tc := range []struct {
		ev   store.WatchEvent[*v1alpha1.Cluster]
		poke bool
	}{
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Added, Name: "eu1", Object: cl(false)}, false},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "eu1", Object: cl(false)}, false}, // a heartbeat
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "eu1", Object: cl(true)}, true},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "eu1", Object: cl(true)}, false},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "eu1", Object: cl(true, "n1")}, true},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "us1", Object: cl(false, "n1")}, true},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "eu1", Object: cl(false)}, true},
		{store.WatchEvent[*v1alpha1.Cluster]{Type: store.Error}, true},
	} {
		ch <- tc.ev
		ch <- store.WatchEvent[*v1alpha1.Cluster]{Type: store.Modified, Name: "idle", Object: cl(false)} // a barrier
		if got := len(pokes); got > 1 || (got == 1) != tc.poke {
			t.Fatalf("event %d (%s %s): %d pokes, want poke %v", i, tc.ev.Type, tc.ev.Name, got, tc.poke)
		}
		for len(pokes) > 0 {
			<-pokes
		}
	}
	close(ch)
	<-done
}
