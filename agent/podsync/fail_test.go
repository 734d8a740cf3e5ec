// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestFailReportsReasonThenDeletes: a member the agent stops is reported
// Failed with the agent's reason, its local pod is deleted, the deletion
// is not reported as LocalPodDeleted, and the pod is not run again.
func TestFailReportsReasonThenDeletes(t *testing.T) {
	s, cs, n, rec := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	lp, _ := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{})
	lp.Status.Phase = corev1.PodRunning
	lp.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if _, err := cs.CoreV1().Pods(localNS).UpdateStatus(ctx, lp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	zero := int64(0)
	if err := s.Fail(ctx, localNS, "p", v1alpha1.ReasonNodeNotReady, "node n1 is not Ready", &zero); err != nil {
		t.Fatal(err)
	}
	failed := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if failed.Status.Reason != v1alpha1.ReasonNodeNotReady || failed.Status.Message != "node n1 is not Ready" ||
		failed.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("reported %+v", failed.Status)
	}
	if ev := <-rec.Events; ev == "" {
		t.Error("no event")
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("local pod not deleted: %v", err)
	}
	n.mu.Lock()
	for _, p := range n.pods {
		if p.Status.Reason == v1alpha1.ReasonLocalPodDeleted {
			t.Errorf("the agent's own deletion reported as %s", p.Status.Reason)
		}
	}
	n.mu.Unlock()
	if got, err := s.GetPod(ctx, hubNS, "p"); err != nil || got.Status.Reason != v1alpha1.ReasonNodeNotReady {
		t.Errorf("GetPod = %v, %v", got, err)
	}
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err == nil {
		t.Error("a stopped member was run again")
	}
	// The hub deletes the failed pod: its end keeps the reason.
	if err := s.DeletePod(ctx, hub); err != nil {
		t.Fatal(err)
	}
	end := n.wait(t, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && len(n.pods) > 0 && p == n.pods[len(n.pods)-1] && p.Status.Reason == v1alpha1.ReasonNodeNotReady
	})
	if st := end.Status.ContainerStatuses[0].State.Terminated; st == nil || st.Reason != v1alpha1.ReasonNodeNotReady {
		t.Errorf("container state after the hub's delete = %+v", st)
	}
}

// TestFailUntracked: a local pod whose hub pod the syncer has not seen yet
// (just after a restart) is reported from its own copy, then deleted; the
// hub pod, when it arrives, is not run again.
func TestFailUntracked(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	lp := LocalPod(hub, "v1", localNS)
	if _, err := cs.CoreV1().Pods(localNS).Create(ctx, lp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := s.localPod(localNS, "p"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("local pod not cached")
		}
	}
	if err := s.Fail(ctx, localNS, "p", v1alpha1.ReasonGPUUnhealthy, "node n1 lost GPUs", nil); err != nil {
		t.Fatal(err)
	}
	got := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Reason == v1alpha1.ReasonGPUUnhealthy })
	if got.UID != hub.UID || got.Status.Phase != corev1.PodFailed {
		t.Errorf("reported %s %+v", got.UID, got.Status)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("local pod not deleted: %v", err)
	}
	hub.Spec.NodeName = "v1"
	if err := s.UpdatePod(ctx, "v1", hub); err != nil {
		t.Fatalf("UpdatePod of a stopped member: %v", err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Error("a stopped member was run again")
	}
}
