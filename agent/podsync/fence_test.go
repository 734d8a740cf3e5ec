// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestFencedSyncerRefusesCreatesAndFailAllStops: while the create check
// refuses, no local pod is created; FailAll reports every member Failed
// with the fence's reason and deletes its local pod.
func TestFencedSyncerRefusesCreatesAndFailAllStops(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	fenced := errors.New("fenced")
	refuse := true
	s.SetCreateCheck(func() error {
		if refuse {
			return fenced
		}
		return nil
	})
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(ctx, "v1", hub); !errors.Is(err, fenced) {
		t.Fatalf("CreatePod while fenced = %v, want the fence's error", err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a local pod was created while fenced: %v", err)
	}
	refuse = false
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	lp, _ := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{})
	lp.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(localNS).UpdateStatus(ctx, lp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err := s.FailAll(ctx, v1alpha1.ReasonFenced, "cut off"); err != nil {
		t.Fatal(err)
	}
	failed := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if failed.Status.Reason != v1alpha1.ReasonFenced {
		t.Errorf("reported reason %q, want %q", failed.Status.Reason, v1alpha1.ReasonFenced)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("local pod not deleted by FailAll: %v", err)
	}
}
