// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// startTimeout is the start deadline of the rigs below.
const startTimeout = time.Minute

// committed places a two-member gang on eu1, prepares and commits it
// through d, and runs member 0 only: member 1 never starts.
func (r *rig) committed(d *dispatch.Dispatcher, job string) {
	r.T.Helper()
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit(job, 2, 8)
	r.cycle()
	r.passWith(d) // members created
	r.agent(job, -1, "")
	r.passWith(d) // committed and stamped
	if dd := jobs.DispatchOf(r.Job(job)); dd == nil || dd.Phase != v1alpha1.DispatchCommitted {
		r.T.Fatalf("not committed: %+v", dd)
	}
	r.setPhase(job, 0, corev1.PodRunning)
	r.passWith(d)
}

func (r *rig) passWith(d *dispatch.Dispatcher) {
	r.T.Helper()
	r.synced(d)
	if err := d.Pass(r.Ctx); err != nil {
		r.T.Fatal(err)
	}
}

// setPhase plays the agent of one member: its pod reaches phase.
func (r *rig) setPhase(job string, member int32, phase corev1.PodPhase) {
	r.T.Helper()
	p, err := r.hub.CoreV1().Pods(ns).Get(r.Ctx, v1alpha1.MemberPodName(job, r.Job(job).Status.Epoch, member), metav1.GetOptions{}) // eu1's
	if err != nil {
		r.T.Fatal(err)
	}
	p.Status.Phase = phase
	if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, p, metav1.UpdateOptions{}); err != nil {
		r.T.Fatal(err)
	}
}

// unschedulable plays the agent of a member whose local pod the workload
// cluster cannot bind.
func (r *rig) unschedulable(job string, member int32) {
	r.T.Helper()
	p, err := r.hub.CoreV1().Pods(ns).Get(r.Ctx, v1alpha1.MemberPodName(job, r.Job(job).Status.Epoch, member), metav1.GetOptions{}) // eu1's
	if err != nil {
		r.T.Fatal(err)
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/16 nodes are available"})
	if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, p, metav1.UpdateOptions{}); err != nil {
		r.T.Fatal(err)
	}
}

// TestStartDeadlineTearsDownWholeGang: a committed gang whose member 1 never
// runs is left alone until its start deadline, then aborted whole with
// reason StartTimeout naming member 1 and its cluster, every member deleted,
// the reservation released and the job requeued with backoff; it is not a
// restart.
func TestStartDeadlineTearsDownWholeGang(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, StartTimeout: startTimeout})
	r.committed(d, "llama")
	r.unschedulable("llama", 1)
	r.Clock.Step(startTimeout - 2*time.Second)
	r.passWith(d)
	if dd := jobs.DispatchOf(r.Job("llama")); dd.Phase != v1alpha1.DispatchCommitted || len(r.pods("llama")) != 2 {
		t.Fatalf("before the deadline: dispatch %+v, %d members", dd, len(r.pods("llama")))
	}
	r.Clock.Step(3 * time.Second)
	r.passWith(d) // abort decided, members deleted
	j := r.Job("llama")
	dd := jobs.DispatchOf(j)
	if dd == nil || dd.Phase != v1alpha1.DispatchAborting || dd.Reason != v1alpha1.ReasonStartTimeout {
		t.Fatalf("at the deadline: dispatch %+v", dd)
	}
	for _, want := range []string{"1 of 2 members did not start within 1m0s", "member 1 on eu1 (node ", "Unschedulable"} {
		if !strings.Contains(dd.Message, want) {
			t.Errorf("message %q does not say %q", dd.Message, want)
		}
	}
	if strings.Contains(dd.Message, "member 0") {
		t.Errorf("message %q names the running member 0", dd.Message)
	}
	if c := cond(j, v1alpha1.JobConditionDispatched); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.HasPrefix(c.Message, v1alpha1.ReasonStartTimeout+": ") {
		t.Fatalf("dispatched condition %+v", c)
	}
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left after the start deadline", n)
	}
	r.passWith(d) // none left: reservation released, job requeued
	j = r.Job("llama")
	if j.Status.Phase != v1alpha1.JobPending || r.reserved("llama") || j.Status.Restarts != 0 {
		t.Fatalf("after the teardown: phase %s reserved %v restarts %d", j.Status.Phase, r.reserved("llama"), j.Status.Restarts)
	}
	c := cond(j, v1alpha1.JobConditionPlaced)
	if c == nil || c.Reason != v1alpha1.ReasonStartTimeout || !strings.Contains(c.Message, "member 1 on eu1") {
		t.Fatalf("placed condition %+v", c)
	}
	if _, ok := jobs.NotBefore(j); !ok || j.Annotations[v1alpha1.AnnotationAborts] != "1" {
		t.Fatalf("requeued without backoff: annotations %v", j.Annotations)
	}
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{}); err == nil {
		t.Fatal("rendezvous service left behind")
	}
	if l, err := r.hub.CoreV1().Pods(metav1.NamespaceAll).List(r.Ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("hub cluster pods left: %v (%v)", l, err)
	}
}

// TestGangRunningBeforeStartDeadlineIsUntouched: a gang fully running
// before its deadline keeps running past it.
func TestGangRunningBeforeStartDeadlineIsUntouched(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, StartTimeout: startTimeout})
	r.committed(d, "llama")
	r.Clock.Step(startTimeout - time.Second)
	r.setPhase("llama", 1, corev1.PodRunning)
	r.passWith(d)
	r.Clock.Step(10 * startTimeout)
	r.passWith(d)
	j := r.Job("llama")
	if dd := jobs.DispatchOf(j); j.Status.Phase != v1alpha1.JobRunning || dd.Phase != v1alpha1.DispatchCommitted ||
		len(r.pods("llama")) != 2 || !r.reserved("llama") {
		t.Fatalf("past the deadline: phase %s dispatch %+v members %d reserved %v", j.Status.Phase, dd,
			len(r.pods("llama")), r.reserved("llama"))
	}
}

// TestStartDeadlineWakesTheDispatcher: Run passes again at a pending start
// deadline by itself, not on its interval (an hour here) and without any
// change to poke it.
func TestStartDeadlineWakesTheDispatcher(t *testing.T) {
	r := newRig(t)
	r.committed(r.disp, "llama")
	ctx, cancel := context.WithCancel(r.Ctx)
	done := make(chan error, 1)
	go func() {
		done <- dispatch.New(r.Store, r.hub, dispatch.Config{Clock: r.Clock, StartTimeout: startTimeout, Interval: time.Hour}).Run(ctx)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	// The interval's ticker and the deadline's timer.
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return r.Clock.Waiters() >= 2, nil
	})
	if err != nil {
		t.Fatalf("no timer armed for the start deadline (%d waiters)", r.Clock.Waiters())
	}
	if len(r.pods("llama")) != 2 {
		t.Fatal("torn down before the deadline")
	}
	r.Clock.Step(startTimeout)
	err = wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		j := r.Job("llama")
		return j.Status.Phase == v1alpha1.JobPending && !r.reserved("llama") && len(r.pods("llama")) == 0, nil
	})
	if err != nil {
		t.Fatalf("not torn down at the deadline: phase %s, %d members", r.Job("llama").Status.Phase, len(r.pods("llama")))
	}
	if c := cond(r.Job("llama"), v1alpha1.JobConditionPlaced); c == nil || c.Reason != v1alpha1.ReasonStartTimeout {
		t.Fatalf("placed condition %+v", c)
	}
}
