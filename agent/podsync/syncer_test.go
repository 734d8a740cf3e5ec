// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

type notes struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (n *notes) add(p *corev1.Pod) { n.mu.Lock(); n.pods = append(n.pods, p); n.mu.Unlock() }

func (n *notes) wait(t *testing.T, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n.mu.Lock()
		for _, p := range n.pods {
			if ok(p) {
				n.mu.Unlock()
				return p
			}
		}
		n.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no matching notification")
	return nil
}

func startSyncer(t *testing.T) (*Syncer, *fake.Clientset, *notes, *record.FakeRecorder) {
	t.Helper()
	return startSyncerWith(t, fake.NewClientset(), nil)
}

// startSyncerWith starts a Syncer with gate (nil: none) on the fake
// cluster cs.
func startSyncerWith(t *testing.T, cs *fake.Clientset, gate Gate) (*Syncer, *fake.Clientset, *notes, *record.FakeRecorder) {
	t.Helper()
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	s := New(c, nil, gate, rec)
	n := &notes{}
	s.Notify("v1", n.add)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Run(ctx) }()
	go func() { _ = s.Run(ctx) }()
	<-s.Synced()
	return s, cs, n, rec
}

func TestLocalDeleteIsReportedNotRecreated(t *testing.T) {
	s, cs, n, rec := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, localNS, metav1.GetOptions{}); err != nil || ns.Labels[v1alpha1.LabelManaged] != "true" {
		t.Fatalf("namespace: %v %v", err, ns)
	}
	if err := cs.CoreV1().Pods(localNS).Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lost := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Reason == v1alpha1.ReasonLocalPodDeleted })
	if lost.Status.Phase != corev1.PodFailed || lost.UID != hub.UID {
		t.Errorf("lost pod = %+v", lost.Status)
	}
	if ev := <-rec.Events; ev == "" {
		t.Error("no event")
	}
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err == nil {
		t.Error("a pod deleted behind the agent's back was recreated")
	}
	if got, err := s.GetPod(ctx, hubNS, "p"); err != nil || got.Status.Reason != v1alpha1.ReasonLocalPodDeleted {
		t.Errorf("GetPod = %v, %v", got, err)
	}
}

func TestAdoptionChecksOwnership(t *testing.T) {
	s, cs, _, _ := startSyncer(t)
	ctx := t.Context()
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: localNS,
		Annotations: map[string]string{v1alpha1.AnnotationHubUID: "someone-else"}}}
	if _, err := cs.CoreV1().Pods(localNS).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePod(ctx, "v1", hubPod(nil)); err == nil {
		t.Error("took over a local pod of another hub pod")
	}
	mine := hubPod(nil)
	mine.Name = "q"
	adopt := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: localNS,
		Annotations: map[string]string{v1alpha1.AnnotationHubUID: string(mine.UID)}}}
	if _, err := cs.CoreV1().Pods(localNS).Create(ctx, adopt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePod(ctx, "v1", mine); err != nil {
		t.Errorf("adopting its own local pod: %v", err)
	}
}

func TestDeleteReportsTerminalStatus(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
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
	if err := s.DeletePod(ctx, hub); err != nil {
		t.Fatal(err)
	}
	end := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := end.Status.ContainerStatuses[0].State; st.Terminated == nil || st.Terminated.Reason != v1alpha1.ReasonDeletedOnHub {
		t.Errorf("container state = %+v", st)
	}
	if _, err := s.GetPod(ctx, hubNS, "p"); err == nil {
		t.Error("a deleted pod is still known")
	}
}

// TestLocalChangeWithoutStatusChangeSendsNothing: a change of a local
// pod's spec or metadata alone (the gate lifted, an annotation) sends the
// hub no status; the next change of its status does.
func TestLocalChangeWithoutStatusChangeSendsNothing(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	if err := s.CreatePod(ctx, "v1", hubPod(nil)); err != nil {
		t.Fatal(err)
	}
	lp, _ := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{})
	lp.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue}}
	lp, err := cs.CoreV1().Pods(localNS).UpdateStatus(ctx, lp, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return len(p.Status.Conditions) == 1 })
	n.mu.Lock()
	sent := len(n.pods)
	n.mu.Unlock()
	lp.Annotations["example.com/touched"] = "1"
	lp.Spec.SchedulingGates = nil
	if lp, err = cs.CoreV1().Pods(localNS).Update(ctx, lp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	lp.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(localNS).UpdateStatus(ctx, lp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	n.mu.Lock()
	defer n.mu.Unlock()
	if got := len(n.pods) - sent; got != 1 {
		t.Errorf("%d statuses sent for a spec change and a status change, want 1 (the status change)", got)
	}
}

// TestLocalSchedulerProgressSendsNothing: a new local pod whose status is
// its hub pod's sends nothing, nor do the local scheduler's SchedulingGated
// and bound (PodScheduled=True) conditions; the local scheduler's refusal
// is sent, and so is the bound condition that ends it.
func TestLocalSchedulerProgressSendsNothing(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Status.Phase = corev1.PodPending
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	sentNow := func() int {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.pods)
	}
	setStatus := func(f func(*corev1.PodStatus)) { t.Helper(); setLocalStatus(t, cs, f) }
	scheduled := func(status corev1.ConditionStatus, reason string) func(*corev1.PodStatus) {
		return func(st *corev1.PodStatus) {
			st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: status, Reason: reason}}
		}
	}
	setStatus(scheduled(corev1.ConditionFalse, corev1.PodReasonSchedulingGated))
	setStatus(scheduled(corev1.ConditionTrue, ""))
	// A change that is sent, to know the two before were handled.
	setStatus(scheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable))
	n.wait(t, func(p *corev1.Pod) bool { return len(p.Status.Conditions) == 1 })
	if got := sentNow(); got != 1 {
		t.Fatalf("%d statuses sent for a create, the gated and bound conditions and a refusal, want 1 (the refusal)", got)
	}
	// Bound after the refusal: sent, the refusal no longer holds.
	setStatus(scheduled(corev1.ConditionTrue, ""))
	n.wait(t, func(p *corev1.Pod) bool {
		return len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Status == corev1.ConditionTrue
	})
	setStatus(func(st *corev1.PodStatus) { st.Reason = "x" })
	setStatus(func(st *corev1.PodStatus) { st.Reason = ""; st.Phase = corev1.PodRunning })
	p := n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if got := sentNow(); got != 4 {
		t.Errorf("%d statuses sent, want 4 (the refusal, bound after it, a reason, running)", got)
	}
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("running member's conditions %+v, want the bound condition carried", p.Status.Conditions)
	}
}

// startSyncerHolding is startSyncer with the start progress held for hold and
// a pod created: the syncer, its notes and a way to set the local status.
func startSyncerHolding(t *testing.T, hold time.Duration) (*Syncer, *notes, func(func(*corev1.PodStatus))) {
	t.Helper()
	s, cs, n, _ := startSyncer(t)
	s.mu.Lock()
	s.startHold = hold
	s.mu.Unlock()
	ctx := t.Context()
	hub := hubPod(nil)
	hub.Status.Phase = corev1.PodPending
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	return s, n, func(f func(*corev1.PodStatus)) { t.Helper(); setLocalStatus(t, cs, f) }
}

// setLocalStatus changes the status of the local pod "p" with f.
func setLocalStatus(t *testing.T, cs *fake.Clientset, f func(*corev1.PodStatus)) {
	t.Helper()
	ctx := t.Context()
	lp, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f(&lp.Status)
	if _, err := cs.CoreV1().Pods(localNS).UpdateStatus(ctx, lp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubeletStarting is a local status as a kubelet writes it while it
// creates the containers of a bound pod, waiting for reason.
func kubeletStarting(reason string) func(*corev1.PodStatus) {
	return func(st *corev1.PodStatus) {
		st.Phase, st.HostIP, st.PodIP = corev1.PodPending, "10.0.0.1", "10.1.0.1"
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
}

func TestStartProgressReplacedByRunning(t *testing.T) {
	_, n, setStatus := startSyncerHolding(t, time.Hour)
	setStatus(kubeletStarting(reasonContainerCreating))
	setStatus(func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	})
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pods) != 1 {
		t.Errorf("%d statuses sent for a start then running, want 1 (running)", len(n.pods))
	}
}

func TestStartProgressWrittenAfterHold(t *testing.T) {
	_, n, setStatus := startSyncerHolding(t, 20*time.Millisecond)
	setStatus(kubeletStarting(reasonContainerCreating))
	p := n.wait(t, func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) == 1 })
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != reasonContainerCreating || p.Status.PodIP != "10.1.0.1" {
		t.Errorf("held start progress sent as %+v", p.Status)
	}
}

func TestStartTroubleSentAtOnce(t *testing.T) {
	_, n, setStatus := startSyncerHolding(t, time.Hour)
	setStatus(kubeletStarting(reasonContainerCreating))
	setStatus(kubeletStarting("ErrImagePull"))
	n.wait(t, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImagePull"
	})
}

// TestHeldStartProgressNeverOverwritesANewerStatus: the held start
// progress is handed to virtual-kubelet on its timer's goroutine while
// the Running status comes on the cache's; however the two cross, the
// last status handed on is Running (virtual-kubelet writes the last one
// it is given).
func TestHeldStartProgressNeverOverwritesANewerStatus(t *testing.T) {
	s, n, setStatus := startSyncerHolding(t, 10*time.Millisecond)
	release, handing := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	s.Notify("v1", func(p *corev1.Pod) {
		if calls.Add(1) == 1 { // the held view: stall it until Running was sent
			close(handing)
			<-release
		}
		n.add(p)
	})
	setStatus(kubeletStarting(reasonContainerCreating))
	<-handing
	setStatus(func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	})
	time.Sleep(50 * time.Millisecond) // the Running status is being sent meanwhile
	close(release)
	n.wait(t, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	time.Sleep(50 * time.Millisecond)
	n.mu.Lock()
	defer n.mu.Unlock()
	if last := n.pods[len(n.pods)-1]; last.Status.Phase != corev1.PodRunning {
		t.Errorf("last status handed on is %s after Running", statusPhases(n.pods))
	}
}

func statusPhases(pods []*corev1.Pod) []corev1.PodPhase {
	var out []corev1.PodPhase
	for _, p := range pods {
		out = append(out, p.Status.Phase)
	}
	return out
}
