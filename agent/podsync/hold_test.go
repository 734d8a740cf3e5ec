// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// holdingGate gates every pod and holds it at its prepare, as agent/gang
// does with a member that fits; released records Release.
type holdingGate struct {
	mu       sync.Mutex
	released []string
}

func (*holdingGate) Mutate(_, local *corev1.Pod) error {
	local.Spec.SchedulingGates = append(local.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1alpha1.SchedulingGate})
	return nil
}
func (*holdingGate) Commit(context.Context, *corev1.Pod) error { return nil }
func (*holdingGate) PrepareCreate(_ context.Context, _, local *corev1.Pod) (func(*corev1.Pod), bool) {
	local.Annotations[v1alpha1.AnnotationPrepared] = "True"
	return func(*corev1.Pod) {}, true
}
func (g *holdingGate) Release(hub *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released = append(g.released, hub.Name)
}

func startHoldingSyncer(t *testing.T) (*Syncer, *fake.Clientset, *notes, *holdingGate) {
	t.Helper()
	cs := fake.NewClientset()
	// The fake stores a dry-run create: answer it as the API server does.
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		if len(c.CreateOptions.DryRun) > 0 {
			return true, c.GetObject(), nil
		}
		return false, nil, nil
	})
	g := &holdingGate{}
	s, _, n, _ := startSyncerWith(t, cs, g)
	return s, cs, n, g
}

func prepared(p *corev1.Pod) bool {
	c := v1alpha1.PreparedCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// epochMember is the hub pod of member i of job j's epoch 1, bound to
// virtual node v1.
func epochMember(i int) *corev1.Pod {
	p := hubPod(nil)
	p.Name, p.UID = fmt.Sprintf("j-e1-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
	p.Labels[v1alpha1.LabelJob], p.Labels[v1alpha1.LabelEpoch], p.Labels[v1alpha1.LabelMember] = "j", "1", strconv.Itoa(i)
	p.Spec.NodeName = "v1"
	return p
}

// TestHeldMemberReportedPreparedThenCreatedUngated: a member the gate
// holds has no local pod and is reported Pending and Prepared; CreateHeld
// creates it without the gang's gate, once, and its status is not written
// again for the Prepared condition's date alone.
func TestHeldMemberReportedPreparedThenCreatedUngated(t *testing.T) {
	s, cs, n, _ := startHoldingSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	shown := n.wait(t, func(p *corev1.Pod) bool { return prepared(p) })
	if shown.Status.Phase != corev1.PodPending {
		t.Fatalf("held member shown %s", shown.Status.Phase)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a held member's local pod exists before the commit: %v", err)
	}
	created, err := s.CreateHeld(ctx, hub.Namespace, hub.Name)
	if err != nil || created == nil {
		t.Fatalf("CreateHeld: %v, %v", created, err)
	}
	lp, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{})
	if err != nil || len(lp.Spec.SchedulingGates) != 0 || !prepared(lp) {
		t.Fatalf("local pod %v: gates %v, prepared %v", err, lp.Spec.SchedulingGates, prepared(lp))
	}
	if again, err := s.CreateHeld(ctx, hub.Namespace, hub.Name); again != nil || err != nil {
		t.Fatalf("created twice: %v, %v", again, err)
	}
	// The created pod stands for the same Prepared condition: no write,
	// neither at the create nor when the cache shows the pod.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := s.localPod(localNS, "p"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never showed the created pod")
		}
	}
	time.Sleep(50 * time.Millisecond) // the handlers after the cache's
	n.mu.Lock()
	sent := len(n.pods)
	n.mu.Unlock()
	if sent != 1 {
		t.Fatalf("%d statuses sent for a held member and its create, want 1", sent)
	}
}

// TestDeletedHeldMemberIsNeverCreated: the deletion of a held member's hub
// pod releases it in the gate, reports its end at once, and CreateHeld
// after it creates nothing.
func TestDeletedHeldMemberIsNeverCreated(t *testing.T) {
	s, cs, n, g := startHoldingSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePod(ctx, hub); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	g.mu.Lock()
	released := append([]string(nil), g.released...)
	g.mu.Unlock()
	if len(released) != 1 || released[0] != "p" {
		t.Fatalf("released %v", released)
	}
	if created, err := s.CreateHeld(ctx, hub.Namespace, hub.Name); created != nil || err != nil {
		t.Fatalf("a deleted member was created: %v, %v", created, err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("local pod: %v", err)
	}
}

// TestHeldMemberRefusals: a member the workload cluster would refuse is
// not held: the dry-run's refusal fails the create as a refused create
// did, and the gate releases it. A held member whose create after the
// commit is refused is reported Failed (LocalCreateRefused), once.
func TestHeldMemberRefusals(t *testing.T) {
	forbidden := func(dryRun bool) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			if len(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun) > 0 != dryRun {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("exceeded quota: gpus"))
		}
	}
	t.Run("at the prepare", func(t *testing.T) {
		s, cs, n, g := startHoldingSyncer(t)
		cs.PrependReactor("create", "pods", forbidden(true))
		hub := hubPod(nil)
		hub.Spec.NodeName = "v1"
		if err := s.CreatePod(t.Context(), "v1", hub); !apierrors.IsForbidden(err) {
			t.Fatalf("CreatePod: %v, want the refusal", err)
		}
		g.mu.Lock()
		released := len(g.released)
		g.mu.Unlock()
		n.mu.Lock()
		sent := len(n.pods)
		n.mu.Unlock()
		if released != 1 || sent != 0 {
			t.Fatalf("released %d, statuses sent %d; want 1 and none (not reported Prepared)", released, sent)
		}
	})
	t.Run("after the commit", func(t *testing.T) {
		s, cs, n, _ := startHoldingSyncer(t)
		hub := hubPod(nil)
		hub.Spec.NodeName = "v1"
		if err := s.CreatePod(t.Context(), "v1", hub); err != nil {
			t.Fatal(err)
		}
		cs.PrependReactor("create", "pods", forbidden(false))
		if created, err := s.CreateHeld(t.Context(), hub.Namespace, hub.Name); created != nil || err != nil {
			t.Fatalf("CreateHeld: %v, %v; want nothing to retry", created, err)
		}
		failed := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if failed.Status.Reason != v1alpha1.ReasonLocalCreateRefused {
			t.Fatalf("reported %s %q", failed.Status.Phase, failed.Status.Reason)
		}
		if created, err := s.CreateHeld(t.Context(), hub.Namespace, hub.Name); created != nil || err != nil {
			t.Fatalf("a refused member asked again: %v, %v", created, err)
		}
	})
}

// TestHeldMembersReportedOnOneHubPod: the held members of one job epoch
// are reported Prepared by the report on one of their hub pods (the
// carrier, the first held), rewritten as members join; the other hub pods
// are written neither then nor at their create after the commit, and each
// shows its own Prepared condition with its first status that matters
// (Running), the carrier's report dropped.
func TestHeldMembersReportedOnOneHubPod(t *testing.T) {
	s, cs, n, _ := startHoldingSyncer(t)
	ctx := t.Context()
	hubs := map[int]*corev1.Pod{}
	for _, i := range []int{2, 0, 1} {
		hubs[i] = epochMember(i)
		if err := s.CreatePod(ctx, "v1", hubs[i]); err != nil {
			t.Fatal(err)
		}
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.Name == "j-e1-2" && v1alpha1.PreparedMembersReport(p) == "0-2" })
	onlyCarrier := func(when string) {
		t.Helper()
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, p := range n.pods {
			if p.Name != "j-e1-2" || !prepared(p) || p.Status.Phase != corev1.PodPending {
				t.Fatalf("%s: status of %s sent (%s, prepared %v), want only the carrier's", when, p.Name, p.Status.Phase, prepared(p))
			}
		}
		if len(n.pods) > 3 {
			t.Fatalf("%s: %d statuses sent for three members, want at most one per member held", when, len(n.pods))
		}
	}
	onlyCarrier("held")
	for i := range 3 {
		if created, err := s.CreateHeld(ctx, hubNS, hubs[i].Name); err != nil || created == nil {
			t.Fatalf("CreateHeld %d: %v, %v", i, created, err)
		}
	}
	local := map[int]*corev1.Pod{}
	for deadline := time.Now().Add(5 * time.Second); len(local) < 3; time.Sleep(10 * time.Millisecond) {
		for i, h := range hubs {
			if lp, ok := s.LocalPodOf(h); ok {
				local[i] = lp
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never showed the created pods")
		}
	}
	time.Sleep(50 * time.Millisecond) // the handlers after the cache's
	onlyCarrier("created")
	for _, i := range []int{1, 2} {
		lp := local[i].DeepCopy()
		lp.Status.Phase = corev1.PodRunning
		if _, err := cs.CoreV1().Pods(lp.Namespace).UpdateStatus(ctx, lp, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := hubs[i].Name
		got := n.wait(t, func(p *corev1.Pod) bool { return p.Name == name && p.Status.Phase == corev1.PodRunning })
		if !prepared(got) || v1alpha1.PreparedMembersReport(got) != "" {
			t.Fatalf("%s running: prepared %v, report %q; want its own Prepared and no report", name, prepared(got), v1alpha1.PreparedMembersReport(got))
		}
	}
	s.mu.Lock()
	left := len(s.reports)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d reports kept after every member was created", left)
	}
}

// TestHeldMembersShareOneDryRun: the members of a job's epoch that arrive
// at once on several workers are admitted by one dry-run create, not one
// each.
func TestHeldMembersShareOneDryRun(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	dryRuns := 0
	release := make(chan struct{})
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		if len(c.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		mu.Lock()
		dryRuns++
		mu.Unlock()
		<-release // the others arrive meanwhile
		return true, c.GetObject(), nil
	})
	s, _, n, _ := startSyncerWith(t, cs, &holdingGate{})
	ctx := t.Context()
	const members = 8
	var wg sync.WaitGroup
	errs := make(chan error, members)
	for i := range members {
		p := epochMember(i)
		wg.Go(func() { errs <- s.CreatePod(ctx, "v1", p) })
	}
	time.Sleep(200 * time.Millisecond) // every member is asking
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n.wait(t, func(p *corev1.Pod) bool { return v1alpha1.PreparedMembersReport(p) == fmt.Sprintf("0-%d", members-1) })
	mu.Lock()
	defer mu.Unlock()
	if dryRuns != 1 {
		t.Fatalf("%d dry-run creates for %d members of one epoch arriving at once, want 1", dryRuns, members)
	}
}
