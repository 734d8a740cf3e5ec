// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fakeDeps answers Ensure with err and records the calls.
type fakeDeps struct {
	mu       sync.Mutex
	err      error
	ensured  []string
	released []string
}

func (d *fakeDeps) Ensure(_ context.Context, hub, local *corev1.Pod) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if local.Labels[v1alpha1.LabelManaged] != "true" {
		return errors.New("Ensure did not get the local pod")
	}
	d.ensured = append(d.ensured, hub.Name)
	return d.err
}

func (d *fakeDeps) Release(hub *corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released = append(d.released, hub.Name)
}

// TestRefusedDependenciesReportUnprepared: a member whose dependencies are
// refused gets no local pod and is reported Pending, Prepared False with
// the reason; it is not tried again, and its deletion ends it at once.
func TestRefusedDependenciesReportUnprepared(t *testing.T) {
	s, cs, n, rec := startSyncer(t)
	d := &fakeDeps{err: &RefusedError{Reason: v1alpha1.ReasonDependencyConflict, Message: `Secret "x" exists`}}
	s.SetDependencies(d)
	ctx := t.Context()
	hub := hubPod(nil)
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatalf("a refusal is reported, not retried: %v", err)
	}
	got := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Reason == v1alpha1.ReasonDependencyConflict })
	var cond *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == v1alpha1.PodConditionPrepared {
			cond = &got.Status.Conditions[i]
		}
	}
	if got.Status.Phase != corev1.PodPending || cond == nil || cond.Status != corev1.ConditionFalse ||
		cond.Reason != v1alpha1.ReasonDependencyConflict || cond.Message != `Secret "x" exists` {
		t.Errorf("reported status = %+v", got.Status)
	}
	if ev := <-rec.Events; ev == "" {
		t.Error("no event")
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err == nil {
		t.Error("a refused member got a local pod")
	}
	if err := s.CreatePod(ctx, "v1", hub); err != nil || len(d.ensured) != 1 {
		t.Errorf("second create: %v, Ensure called %d times, want once", err, len(d.ensured))
	}
	if err := s.DeletePod(ctx, hub); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if len(d.released) != 1 {
		t.Errorf("released %v, want the deleted member", d.released)
	}
}

// TestDependencyErrorsAreRetried: any other error of Ensure fails the
// create (virtual-kubelet retries it); no local pod exists meanwhile.
func TestDependencyErrorsAreRetried(t *testing.T) {
	s, cs, _, _ := startSyncer(t)
	d := &fakeDeps{err: errors.New("hub cluster unreachable")}
	s.SetDependencies(d)
	ctx := t.Context()
	hub := hubPod(nil)
	if err := s.CreatePod(ctx, "v1", hub); err == nil {
		t.Fatal("CreatePod succeeded without its dependencies")
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err == nil {
		t.Error("local pod created without its dependencies")
	}
	d.mu.Lock()
	d.err = nil
	d.mu.Unlock()
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Errorf("local pod after the retry: %v", err)
	}
}

// TestRefusalKeepsAnAdoptedMember: after a restart, a member whose local
// pod runs already keeps it when its dependencies are refused; the refusal
// is only recorded as an event.
func TestRefusalKeepsAnAdoptedMember(t *testing.T) {
	s, cs, _, rec := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	if err := s.CreatePod(ctx, "v1", hub); err != nil { // the earlier run
		t.Fatal(err)
	}
	s2 := restartedSyncer(t, cs, rec)
	s2.SetDependencies(&fakeDeps{err: &RefusedError{Reason: v1alpha1.ReasonDependencyMissing, Message: "gone"}})
	if err := s2.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("adopted local pod: %v", err)
	}
	got, err := s2.GetPod(ctx, hubNS, "p")
	if err != nil || got.Status.Reason == v1alpha1.ReasonDependencyMissing {
		t.Errorf("adopted member reported refused: %v %+v", err, got)
	}
	found := false
	for len(rec.Events) > 0 {
		found = found || strings.Contains(<-rec.Events, v1alpha1.ReasonDependencyMissing)
	}
	if !found {
		t.Error("no event for the refused dependencies")
	}
}

// restartedSyncer is a second syncer on cs, as after an agent restart.
func restartedSyncer(t *testing.T, cs *fake.Clientset, rec *record.FakeRecorder) *Syncer {
	t.Helper()
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	s := New(c, nil, nil, rec)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Run(ctx) }()
	go func() { _ = s.Run(ctx) }()
	<-s.Synced()
	return s
}
