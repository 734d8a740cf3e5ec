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
)

// leading runs a dispatcher with an interval of an hour (no sweep after
// the first: only the changes queue jobs) until the test ends, and
// returns once its first sweep is done.
func (r *rig) leading() {
	r.T.Helper()
	r.leadingWith(dispatch.Config{Clock: r.Clock, Interval: time.Hour, Workers: 2})
}

// leadingWith runs a dispatcher with cfg until the test ends, and returns
// once its first sweep is done.
func (r *rig) leadingWith(cfg dispatch.Config) {
	r.T.Helper()
	ctx, cancel := context.WithCancel(r.Ctx)
	done := make(chan error, 1)
	d := dispatch.New(r.Store, r.hub, cfg)
	go func() { done <- d.Run(ctx) }()
	r.T.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			r.T.Errorf("run: %v", err)
		}
	})
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		msg, err := d.State().Check(ctx)
		return err == nil && strings.HasPrefix(msg, "leading since"), nil
	})
	if err != nil {
		r.T.Fatal("the dispatcher did not lead and sweep")
	}
}

// memberPhase polls until member i of job has phase in the job's status.
func (r *rig) memberPhase(job string, i int, phase v1alpha1.MemberPhase) error {
	return wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		ms := r.Job(job).Status.Members
		return len(ms) > i && ms[i].Phase == phase, nil
	})
}

// committedGang places a gang of n members on eu1 and commits it through
// d, by hand.
func (r *rig) committedGang(d *dispatch.Dispatcher, job string, n int32) {
	r.T.Helper()
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0), node("c", "r", 0))
	r.Submit(job, n, 8)
	r.cycle()
	r.passWith(d) // members created
	r.agent(job, -1, "")
	r.passWith(d) // committed and stamped
}

// TestLeadReconcilesAChangedJob: a member pod's change queues its job for
// the workers; no sweep (the interval is an hour, the clock never moves)
// is needed for the job to follow it.
func TestLeadReconcilesAChangedJob(t *testing.T) {
	r := newRig(t)
	r.committed(r.disp, "llama") // member 0 runs, member 1 does not
	r.leading()
	r.setPhase("llama", 1, corev1.PodRunning)
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return r.Job("llama").Status.Phase == v1alpha1.JobRunning, nil
	})
	if err != nil {
		t.Fatalf("the job did not follow its member: phase %s, members %+v", r.Job("llama").Status.Phase, r.Job("llama").Status.Members)
	}
}

// TestLeadSpacesMemberPhaseWrites: while a gang starts, Lead writes the
// job for a member's new phase at most every 500 ms; the job's own
// transition (every member running) is written at once.
func TestLeadSpacesMemberPhaseWrites(t *testing.T) {
	r := newRig(t)
	r.committedGang(r.disp, "llama", 3)
	r.leading()
	r.setPhase("llama", 0, corev1.PodRunning)
	if err := r.memberPhase("llama", 0, v1alpha1.MemberRunning); err != nil {
		t.Fatalf("the first member phase was not written: %+v", r.Job("llama").Status.Members)
	}
	r.setPhase("llama", 1, corev1.PodRunning)
	time.Sleep(300 * time.Millisecond) // the workers reconcile; the fake clock stands still
	if ms := r.Job("llama").Status.Members; ms[1].Phase != v1alpha1.MemberPrepared {
		t.Fatalf("member 1 written within 500 ms of member 0: %+v", ms)
	}
	r.Clock.Step(500 * time.Millisecond)
	if err := r.memberPhase("llama", 1, v1alpha1.MemberRunning); err != nil {
		t.Fatalf("member 1 not written 500 ms later: %+v", r.Job("llama").Status.Members)
	}
	r.setPhase("llama", 2, corev1.PodRunning) // every member runs: at once
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return r.Job("llama").Status.Phase == v1alpha1.JobRunning, nil
	})
	if err != nil {
		t.Fatalf("the start was not written at once: phase %s, members %+v", r.Job("llama").Status.Phase, r.Job("llama").Status.Members)
	}
}

// TestPrepareDeadlineNamesTheUnpreparedMembers: a prepare timeout says
// which members did not report Prepared, and where.
func TestPrepareDeadlineNamesTheUnpreparedMembers(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("slow", 2, 8)
	r.cycle()
	r.pass() // members created
	p := r.member("slow", 0)
	p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue, Reason: "Fits"}}
	if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Clock.Step(11 * time.Second)
	r.pass()
	r.pass()
	c := cond(r.Job("slow"), v1alpha1.JobConditionPlaced)
	if c == nil || c.Reason != "PrepareTimeout" || !strings.Contains(c.Message, "1 of 2 members prepared") ||
		!strings.Contains(c.Message, "not prepared: member 1 on eu1 (node b)") {
		t.Fatalf("placed condition %+v", c)
	}
}

// TestPrepareDeadlineWakesTheDispatcher: a gang whose member never reports
// Prepared sends no event; Lead passes again at its prepare deadline by
// itself. The clusters are read every second but no sweep comes (resync an
// hour), so nothing else would queue the job.
func TestPrepareDeadlineWakesTheDispatcher(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("slow", 2, 8)
	r.cycle()
	r.leadingWith(dispatch.Config{Clock: r.Clock, Interval: time.Second, Resync: time.Hour, PrepareTimeout: 10 * time.Second, Workers: 2})
	err := wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(r.pods("slow")) == 2, nil
	})
	if err != nil {
		t.Fatalf("members not created: %d", len(r.pods("slow")))
	}
	for range 12 { // a second at a time: each tick reads the clusters only
		r.Clock.Step(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	err = wait.PollUntilContextTimeout(r.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c := cond(r.Job("slow"), v1alpha1.JobConditionPlaced)
		return c != nil && c.Reason == "PrepareTimeout", nil
	})
	if err != nil {
		t.Fatalf("not aborted at the prepare deadline: dispatch %+v", r.Job("slow").Status.Dispatch)
	}
}
