// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// drainRuns counts the drain tests' jobs: a fresh name per run, since a
// resubmitted name is the cancelled job (-count).
var drainRuns atomic.Int64

// drainable is a running gang of members×8 GPUs over at most two clusters
// with a short preemption grace, named prefix-N.
func drainable(t *testing.T, prefix string, members int32) (string, *v1alpha1.Job) {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, drainRuns.Add(1))
	submit(t, newJob(name, "e2e", members, 8, func(j *v1alpha1.Job) {
		g := int64(2)
		j.Spec.Preemption.GracePeriodSeconds = &g
		j.Spec.Placement.MaxClusters = 2
	}))
	return name, waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
}

// waitMoved waits until the job runs again at a later epoch with no member
// where off says, and checks that the move used no restart and no backoff.
func waitMoved(t *testing.T, name string, epoch int64, off func(v1alpha1.MemberStatus) bool) *v1alpha1.Job {
	t.Helper()
	var j *v1alpha1.Job
	eventually(t, 2*time.Minute, "gang running again elsewhere", func(context.Context) (bool, error) {
		j = getJob(t, name)
		if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch <= epoch {
			return false, fmt.Errorf("phase %s epoch %d", j.Status.Phase, j.Status.Epoch)
		}
		for _, m := range j.Status.Members {
			if off(m) {
				return false, fmt.Errorf("member %d on %s/%s", m.Index, m.Cluster, m.Node)
			}
		}
		return true, nil
	})
	if j.Status.Restarts != 0 || j.Annotations[v1alpha1.AnnotationAborts] != "" {
		t.Fatalf("a drain counted: restarts %d, aborts %q", j.Status.Restarts, j.Annotations[v1alpha1.AnnotationAborts])
	}
	return j
}

// TestClusterDrainMovesGangWithoutRestart drains the cluster a running gang
// is on: the gang runs again on another cluster, status.restarts stays 0,
// nothing of it is left on the drained cluster, which then shows Cordoned
// (Drained).
func TestClusterDrainMovesGangWithoutRestart(t *testing.T) {
	skipShort(t)
	name, j := drainable(t, "drain-cluster", 2)
	from := j.Status.Members[0].Cluster
	start := time.Now()
	if _, _, err := h.reg.Drain(t.Context(), from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, _, err := h.reg.Cordon(context.WithoutCancel(t.Context()), from, false); err != nil {
			t.Errorf("uncordon %s: %v", from, err)
		}
	})
	j = waitMoved(t, name, j.Status.Epoch, func(m v1alpha1.MemberStatus) bool { return m.Cluster == from })
	t.Logf("drain of %s to the gang Running again on %v: %s (epoch %d, restarts %d)",
		from, j.Status.Placement.Clusters, time.Since(start).Round(10*time.Millisecond), j.Status.Epoch, j.Status.Restarts)
	eventually(t, 30*time.Second, "cluster drained", func(ctx context.Context) (bool, error) {
		c, _, err := h.reg.GetCluster(ctx, from)
		if err != nil {
			return false, err
		}
		local, err := localPods(ctx, name)
		if err != nil {
			return false, err
		}
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionDrained)
		return c.Status.State == v1alpha1.ClusterCordoned && d != nil && d.Reason == v1alpha1.ReasonDrained && len(local[from]) == 0,
			fmt.Errorf("state %s, drained %+v, %d local pods left", c.Status.State, d, len(local[from]))
	})
	t.Logf("drain of %s complete (Cordoned, Drained) after %s", from, time.Since(start).Round(10*time.Millisecond))
}

// TestNodeDrainMovesGangWithoutRestart drains the node of a running gang's
// member: the gang runs again without that node and without a restart.
func TestNodeDrainMovesGangWithoutRestart(t *testing.T) {
	skipShort(t)
	name, j := drainable(t, "drain-node", 2)
	m := j.Status.Members[0]
	start := time.Now()
	if _, _, err := h.reg.DrainNode(t.Context(), m.Cluster, m.Node, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, _, err := h.reg.DrainNode(context.WithoutCancel(t.Context()), m.Cluster, m.Node, false); err != nil {
			t.Errorf("uncordon %s/%s: %v", m.Cluster, m.Node, err)
		}
	})
	j = waitMoved(t, name, j.Status.Epoch, func(x v1alpha1.MemberStatus) bool {
		return x.Cluster == m.Cluster && x.Node == m.Node
	})
	t.Logf("drain of node %s/%s to the gang Running again: %s (epoch %d, restarts %d)",
		m.Cluster, m.Node, time.Since(start).Round(10*time.Millisecond), j.Status.Epoch, j.Status.Restarts)
}

// TestClusterDrainMovesTwoClusterGangWhole drains one of the two clusters
// of a running 18-member gang (144 GPUs: more than one cluster holds): the
// whole gang, members on the other cluster included, runs again at a new
// epoch on the two clusters left, without a restart.
func TestClusterDrainMovesTwoClusterGangWhole(t *testing.T) {
	skipShort(t)
	name, j := drainable(t, "drain-two", 18)
	if len(j.Status.Placement.Clusters) != 2 {
		t.Fatalf("placed on %v, want two clusters", j.Status.Placement.Clusters)
	}
	from := j.Status.Placement.Clusters[0]
	start := time.Now()
	if _, _, err := h.reg.Drain(t.Context(), from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, _, err := h.reg.Cordon(context.WithoutCancel(t.Context()), from, false); err != nil {
			t.Errorf("uncordon %s: %v", from, err)
		}
	})
	epoch := j.Status.Epoch
	j = waitMoved(t, name, epoch, func(m v1alpha1.MemberStatus) bool { return m.Cluster == from })
	t.Logf("drain of %s to the 18-member gang Running again on %v: %s (epoch %d, restarts %d)",
		from, j.Status.Placement.Clusters, time.Since(start).Round(10*time.Millisecond), j.Status.Epoch, j.Status.Restarts)
	local, err := localPods(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for c, ps := range local {
		for _, p := range ps {
			if p.Annotations[v1alpha1.AnnotationEpoch] == fmt.Sprint(epoch) && p.DeletionTimestamp == nil {
				t.Errorf("local pod %s of the drained epoch %d left on %s", p.Name, epoch, c)
			}
		}
	}
}
