// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// TestReclaimedNodeMovesGangWithGraceWithoutRestart: a member its agent
// marked NodeReclaimed (its spot node is marked to go) moves the whole gang:
// an abort with reason NodeReclaimed, every member deleted with the 45 s
// preemption grace, then the requeue at once, with no restart counted
// (maxRestarts 0 would otherwise fail the job) and no backoff.
func TestReclaimedNodeMovesGangWithGraceWithoutRestart(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0), node("d", "r", 0))
	r.running("llama")
	p := r.pods("llama")[0]
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: v1alpha1.PodConditionNodeReclaimed,
		Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonNodeReclaimed, Message: "node a is marked to go (spot taint t)"})
	if _, err := r.hub.CoreV1().Pods(ns).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	graces := r.deleteGraces()
	r.pass()
	dd := jobs.DispatchOf(r.Job("llama"))
	if dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonNodeReclaimed || !strings.Contains(dd.Message, "node a") {
		t.Fatalf("dispatch %+v, want Aborting/%s naming node a", dd, v1alpha1.ReasonNodeReclaimed)
	}
	if len(*graces) != 2 || (*graces)[0] != 45 || (*graces)[1] != 45 {
		t.Fatalf("members deleted with graces %v, want both the 45 s preemption grace", *graces)
	}
	r.pass()
	j := r.Job("llama")
	if j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") || j.Status.Restarts != 0 {
		t.Fatalf("phase %s reserved %v restarts %d, want Pending, released, no restart", j.Status.Phase, r.reserved("llama"), j.Status.Restarts)
	}
	if c := cond(j, v1alpha1.JobConditionPlaced); c == nil || c.Reason != v1alpha1.ReasonNodeReclaimed {
		t.Fatalf("placed condition %+v, want reason %s", c, v1alpha1.ReasonNodeReclaimed)
	}
	if _, ok := jobs.NotBefore(j); ok {
		t.Fatal("a reclaim is requeued with backoff")
	}
}
