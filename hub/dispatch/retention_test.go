// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

const retention = time.Hour

// runningWith places a two-member gang on two 8-GPU nodes with no restart
// left (maxRestarts 0) and runs it under d.
func (r *rig) runningWith(d *dispatch.Dispatcher, job string) {
	r.T.Helper()
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit(job, 2, 8, func(j *v1alpha1.Job) { zero := int32(0); j.Spec.FailurePolicy.MaxRestarts = &zero })
	r.cycle()
	r.passWith(d) // members created
	r.agent(job, -1, "")
	r.passWith(d) // committed
	r.agent(job, -1, corev1.PodRunning)
	r.passWith(d)
	if ph := r.Job(job).Status.Phase; ph != v1alpha1.JobRunning {
		r.T.Fatalf("not running: %s", ph)
	}
}

// succeededWith runs job under d until every member succeeded and the job
// says so; the pass after that is the teardown's.
func (r *rig) succeededWith(d *dispatch.Dispatcher, job string) {
	r.T.Helper()
	r.runningWith(d, job)
	r.setPhase(job, 0, corev1.PodSucceeded)
	r.setPhase(job, 1, corev1.PodSucceeded)
	r.passWith(d) // Succeeded
	if ph := r.Job(job).Status.Phase; ph != v1alpha1.JobSucceeded {
		r.T.Fatalf("not succeeded: %s", ph)
	}
}

// member returns job's member pod with index i of epoch 1 (nil: gone).
func (r *rig) member(job string, i int32) *corev1.Pod {
	r.T.Helper()
	for _, p := range r.pods(job) {
		if p.Name == v1alpha1.MemberPodName(job, 1, i) {
			return &p
		}
	}
	return nil
}

// podState says whether p is gone, terminating or kept, for messages.
func podState(p *corev1.Pod) string {
	switch {
	case p == nil:
		return "gone"
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("%s, phase %s, terminating since %s", p.Name, p.Status.Phase, p.DeletionTimestamp)
	}
	return fmt.Sprintf("%s, phase %s, kept", p.Name, p.Status.Phase)
}

// gracefulDeletes makes the fake hub cluster delete a member pod the way
// the API server does with an agent behind it: the first delete only marks
// it terminating, it goes on a later delete or when the test removes it.
func (r *rig) gracefulDeletes() {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	r.hub.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteAction)
		o, err := r.hub.Tracker().Get(gvr, da.GetNamespace(), da.GetName())
		if err != nil {
			return false, nil, nil
		}
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			return false, nil, nil
		}
		now := metav1.NewTime(r.Clock.Now())
		p.DeletionTimestamp = &now
		return true, p, r.hub.Tracker().Update(gvr, p, da.GetNamespace())
	})
}

// TestSucceededJobKeepsMembersForRetention: with FinishedRetention 1h a
// succeeded job's member pods stay (their logs), its reservation is
// released at once (the GPUs place another gang), the dispatcher wakes at
// the completion time plus 1h, and then the pods go.
func TestSucceededJobKeepsMembersForRetention(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, FinishedRetention: retention})
	r.succeededWith(d, "llama")
	r.passWith(d) // released, members kept
	j := r.Job("llama")
	if r.reserved("llama") {
		t.Fatal("a succeeded job kept its reservation")
	}
	for i := int32(0); i < 2; i++ {
		if p := r.member("llama", i); p == nil || p.DeletionTimestamp != nil {
			t.Fatalf("member %d not kept after success: %s", i, podState(p))
		}
	}
	until := j.Status.CompletionTime.Add(retention)
	if w := dispatch.Wake(d); !w.Equal(until) {
		t.Fatalf("wake %v, want the completion time plus retention %v", w, until)
	}
	r.Submit("next", 2, 8)
	if res := r.cycle(); len(res.Placed) != 1 || !r.reserved("next") {
		t.Fatalf("the kept members' GPUs did not place the next gang: %+v", res)
	}
	r.Clock.Step(until.Sub(r.Clock.Now()) - time.Second)
	r.passWith(d)
	if n := len(r.pods("llama")); n != 2 {
		t.Fatalf("%d members a second before the retention ends, want 2", n)
	}
	r.Clock.Step(2 * time.Second)
	r.passWith(d)
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left after the retention", n)
	}
}

// TestFailedJobStopsRunningMembersAndKeepsFailedOne: a member fails while
// the other runs and no restart is left: the running member is deleted at
// once, the failed one stays; the reservation is released (and the job
// failed) only once the running member is gone; the failed member's pod
// goes when the retention ends.
func TestFailedJobStopsRunningMembersAndKeepsFailedOne(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, FinishedRetention: retention})
	r.runningWith(d, "llama")
	r.gracefulDeletes()
	r.setPhase("llama", 1, corev1.PodFailed)
	r.passWith(d) // failure decided, running member deleted
	if dd := jobs.DispatchOf(r.Job("llama")); dd == nil || dd.Phase != v1alpha1.DispatchFailing {
		t.Fatalf("dispatch %+v, want Failing", dd)
	}
	if p := r.member("llama", 0); p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("running member 0 not being deleted: %s", podState(p))
	}
	if p := r.member("llama", 1); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("failed member 1 not kept: %s", podState(p))
	}
	r.passWith(d) // member 0 still terminating
	if !r.reserved("llama") || r.Job("llama").Status.Phase.Terminal() {
		t.Fatalf("released (phase %s) while running member 0 is still terminating", r.Job("llama").Status.Phase)
	}
	if err := r.hub.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, v1alpha1.MemberPodName("llama", 1, 0)); err != nil {
		t.Fatal(err)
	}
	r.passWith(d) // member 0 gone: released, job failed
	j := r.Job("llama")
	if j.Status.Phase != v1alpha1.JobFailed || r.reserved("llama") {
		t.Fatalf("phase %s reserved %v, want Failed and released", j.Status.Phase, r.reserved("llama"))
	}
	r.passWith(d)
	if p := r.member("llama", 1); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("failed member 1 not kept after the job failed: %s", podState(p))
	}
	until := j.Status.CompletionTime.Add(retention)
	if w := dispatch.Wake(d); !w.Equal(until) {
		t.Fatalf("wake %v, want the completion time plus retention %v", w, until)
	}
	r.Clock.Step(retention)
	r.passWith(d)
	if p := r.member("llama", 1); p != nil && p.DeletionTimestamp == nil {
		t.Fatal("failed member 1 not deleted after the retention")
	}
}

// TestNoRetentionDeletesEveryMember: with FinishedRetention 0 a succeeded
// job's members are deleted at once, and so are both the failed and the
// running member of a failed job.
func TestNoRetentionDeletesEveryMember(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock})
	r.succeededWith(d, "ok")
	r.passWith(d) // members deleted
	if n := len(r.pods("ok")); n != 0 {
		t.Fatalf("%d members of a succeeded job left without retention", n)
	}
	if w := dispatch.Wake(d); !w.IsZero() {
		t.Fatalf("wake %v without retention", w)
	}
	r.passWith(d) // released
	if r.reserved("ok") {
		t.Fatal("succeeded job still reserved")
	}

	r.Submit("bad", 2, 8, func(j *v1alpha1.Job) { zero := int32(0); j.Spec.FailurePolicy.MaxRestarts = &zero })
	r.cycle()
	r.passWith(d)
	r.agent("bad", -1, "")
	r.passWith(d)
	r.agent("bad", -1, corev1.PodRunning)
	r.passWith(d)
	r.setPhase("bad", 1, corev1.PodFailed)
	r.passWith(d) // failure decided, every member deleted
	if n := len(r.pods("bad")); n != 0 {
		t.Fatalf("%d members of a failing job left without retention", n)
	}
	r.passWith(d)
	if j := r.Job("bad"); j.Status.Phase != v1alpha1.JobFailed || r.reserved("bad") {
		t.Fatalf("phase %s reserved %v, want Failed and released", j.Status.Phase, r.reserved("bad"))
	}
}

// TestDeletedJobDeletesKeptMembers: a finished job's kept members go at
// once when the job itself is deleted.
func TestDeletedJobDeletesKeptMembers(t *testing.T) {
	r := newRig(t)
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, FinishedRetention: retention})
	r.succeededWith(d, "llama")
	r.passWith(d) // released, members kept
	if n := len(r.pods("llama")); n != 2 || r.reserved("llama") {
		t.Fatalf("%d members kept, reserved %v: want 2 and released", n, r.reserved("llama"))
	}
	if err := store.NewCollection(r.Store, jobs.Kind, store.JSONCodec[*v1alpha1.Job]()).Delete(r.Ctx, "llama", 0); err != nil {
		t.Fatal(err)
	}
	r.passWith(d)
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("%d members left after the job was deleted", n)
	}
}
