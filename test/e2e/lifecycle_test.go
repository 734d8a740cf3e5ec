// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// spare is the cluster the pinned tests use.
func spare() string { return clusterNames[len(clusterNames)-1] }

// TestFragmentedNeverGetsAnEightGPUMember: every node of the cluster has
// 4 of 8 GPUs free; an 8-GPU member waits, reason Fragmented.
func TestFragmentedNeverGetsAnEightGPUMember(t *testing.T) {
	skipShort(t)
	c := spare()
	nodes := clusterNodes(t, c)
	squat(t, c, nodes, 4)
	waitFree(t, c, 4*len(nodes))
	submit(t, newJob("fragmented", "e2e", 1, 8, onCluster(c)))
	eventually(t, 30*time.Second, "Fragmented", func(ctx context.Context) (bool, error) {
		j := getJob(t, "fragmented")
		cond := condition(j, v1alpha1.JobConditionPlaced)
		return cond != nil && cond.Reason == "Fragmented", fmt.Errorf("phase %s condition %+v", j.Status.Phase, cond)
	})
	if hp, _ := hubPods(t.Context(), "fragmented"); len(hp) != 0 {
		t.Fatalf("%d member pods created for a fragmented fit", len(hp))
	}
}

// TestPrepareFailureAbortsWholeGang: after the snapshot, a local pod takes
// the GPUs of one member's node; that member cannot prepare, the whole gang
// is aborted with nothing left of it, and the job is placed again later.
func TestPrepareFailureAbortsWholeGang(t *testing.T) {
	skipShort(t)
	c := spare()
	h.dispStop() // hold the dispatch so that the snapshot goes stale
	restarted := false
	defer func() {
		if !restarted {
			h.dispStop = h.run(h.rctx, h.newDispatcher().Run)
		}
	}()
	submit(t, newJob("prep-fail", "e2e", 4, 8, onCluster(c)))
	j := waitPhase(t, "prep-fail", v1alpha1.JobPlaced, 30*time.Second)
	squat(t, c, []string{j.Status.Members[0].Node}, 8)
	h.dispStop, restarted = h.run(h.rctx, h.newDispatcher().Run), true
	j = waitPhase(t, "prep-fail", v1alpha1.JobRunning, time.Minute)
	if j.Status.Epoch < 2 || j.Annotations[v1alpha1.AnnotationAborts] == "" {
		t.Fatalf("running at epoch %d, aborts %q: the failed prepare did not abort", j.Status.Epoch, j.Annotations[v1alpha1.AnnotationAborts])
	}
	local, err := localPods(t.Context(), "prep-fail")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ps := range local {
		for _, p := range ps {
			n++
			if p.Annotations[v1alpha1.AnnotationEpoch] != strconv.FormatInt(j.Status.Epoch, 10) {
				t.Errorf("local pod %s of epoch %s left from the aborted dispatch", p.Name, p.Annotations[v1alpha1.AnnotationEpoch])
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d local pods, want 4", n)
	}
}

// TestMemberFailureRestartsWholeGang: a local pod deleted behind the
// agent's back fails its member; the whole gang restarts at a new epoch.
func TestMemberFailureRestartsWholeGang(t *testing.T) {
	skipShort(t)
	c := spare()
	submit(t, newJob("restart", "e2e", 3, 8, onCluster(c)))
	j := waitPhase(t, "restart", v1alpha1.JobRunning, time.Minute)
	local, err := localPods(t.Context(), "restart")
	if err != nil || len(local[c]) != 3 {
		t.Fatalf("local pods %v (%v)", local, err)
	}
	if err := workloads[c].CoreV1().Pods(local[c][0].Namespace).Delete(t.Context(), local[c][0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "restarted gang running", func(ctx context.Context) (bool, error) {
		j = getJob(t, "restart")
		return j.Status.Restarts == 1 && j.Status.Phase == v1alpha1.JobRunning && j.Status.Epoch > 1,
			fmt.Errorf("restarts %d phase %s epoch %d", j.Status.Restarts, j.Status.Phase, j.Status.Epoch)
	})
	eventually(t, 30*time.Second, "only the new epoch's members", func(ctx context.Context) (bool, error) {
		local, err := localPods(ctx, "restart")
		if err != nil {
			return false, err
		}
		n := 0
		for _, ps := range local {
			for _, p := range ps {
				if p.Annotations[v1alpha1.AnnotationEpoch] != strconv.FormatInt(j.Status.Epoch, 10) {
					return false, fmt.Errorf("pod %s of epoch %s", p.Name, p.Annotations[v1alpha1.AnnotationEpoch])
				}
				n++
			}
		}
		return n == 3, fmt.Errorf("%d local pods", n)
	})
}

// TestCancelRemovesEveryMember cancels a running two-cluster gang.
func TestCancelRemovesEveryMember(t *testing.T) {
	skipShort(t)
	submit(t, newJob("cancel-me", "e2e", 18, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	waitPhase(t, "cancel-me", v1alpha1.JobRunning, time.Minute)
	if _, _, err := h.jobs.Cancel(t.Context(), "cancel-me"); err != nil {
		t.Fatal(err)
	}
	waitNothingLeft(t, "cancel-me", time.Minute)
	if j := getJob(t, "cancel-me"); j.Status.Phase != v1alpha1.JobCancelled {
		t.Fatalf("phase %s", j.Status.Phase)
	}
}

// TestPreemptionOfSpotByProduction: a spot job fills a cluster; a
// production job preempts it after its grace period; the spot job waits.
func TestPreemptionOfSpotByProduction(t *testing.T) {
	skipShort(t)
	c := spare()
	submit(t, newJob("spot", "e2e", 16, 8, onCluster(c), func(j *v1alpha1.Job) {
		j.Spec.PriorityClass = v1alpha1.PrioritySpot
		g := int64(1)
		j.Spec.Preemption.GracePeriodSeconds = &g
	}))
	waitPhase(t, "spot", v1alpha1.JobRunning, time.Minute)
	submit(t, newJob("prod", "e2e", 2, 8, onCluster(c), func(j *v1alpha1.Job) {
		j.Spec.PriorityClass = v1alpha1.PriorityProduction
	}))
	defer func() {
		if t.Failed() {
			s := getJob(t, "spot")
			t.Logf("spot: phase %s epoch %d annotations %v conditions %v", s.Status.Phase, s.Status.Epoch, s.Annotations, s.Status.Conditions)
			for _, job := range []string{"spot", "prod"} {
				local, _ := localPods(context.Background(), job)
				for cl, ps := range local {
					for _, p := range ps {
						t.Logf("%s: %s/%s node %q target %s phase %s epoch %s gates %v", job, cl, p.Name, p.Spec.NodeName,
							p.Annotations[v1alpha1.AnnotationTargetNode], p.Status.Phase, p.Annotations[v1alpha1.AnnotationEpoch], p.Spec.SchedulingGates)
					}
				}
			}
		}
	}()
	waitPhase(t, "prod", v1alpha1.JobRunning, time.Minute)
	// The victim is requeued once its members are gone, and cannot come
	// back while prod holds part of the cluster.
	waitPhase(t, "spot", v1alpha1.JobPending, 30*time.Second)
	if local, _ := localPods(t.Context(), "spot"); len(local) != 0 {
		t.Fatalf("spot members left after preemption: %d clusters", len(local))
	}
	eventually(t, 30*time.Second, "spot waiting with a reason", func(ctx context.Context) (bool, error) {
		s := getJob(t, "spot")
		c := condition(s, v1alpha1.JobConditionPlaced)
		return s.Status.Phase == v1alpha1.JobPending && c != nil && c.Reason == "InsufficientGPUs",
			fmt.Errorf("phase %s condition %+v", s.Status.Phase, c)
	})
	if p := getJob(t, "prod"); p.Status.Phase != v1alpha1.JobRunning {
		t.Fatalf("prod phase %s", p.Status.Phase)
	}
}

// TestHubRestartMidDispatch restarts the scheduler and dispatcher while a
// gang's members are being prepared: the gang ends fully running.
func TestHubRestartMidDispatch(t *testing.T) {
	skipShort(t)
	c := spare()
	submit(t, newJob("restart-hub", "e2e", 8, 8, onCluster(c)))
	eventually(t, 30*time.Second, "members being dispatched", func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, "restart-hub")
		return len(hp) > 0, err
	})
	h.restartScheduling(h.rctx)
	j := waitPhase(t, "restart-hub", v1alpha1.JobRunning, time.Minute)
	local, err := localPods(t.Context(), "restart-hub")
	if err != nil {
		t.Fatal(err)
	}
	if len(local[c]) != 8 {
		t.Fatalf("%d local pods, want 8", len(local[c]))
	}
	for _, p := range local[c] {
		if p.Spec.NodeName == "" || p.Annotations[v1alpha1.AnnotationEpoch] != strconv.FormatInt(j.Status.Epoch, 10) {
			t.Fatalf("local pod %s: node %q epoch %s", p.Name, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationEpoch])
		}
	}
}
