// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// ns is the hub namespace of the members of cluster eu1.
var ns = v1alpha1.ClusterNamespace("eu1")

// rig is a scheduler and a dispatcher on one store with a fake hub cluster.
type rig struct {
	*env
	hub   *fake.Clientset
	sched *scheduler.Scheduler
	disp  *dispatch.Dispatcher
}

func newRig(t *testing.T) *rig {
	e := newEnv(t)
	hub := fake.NewClientset()
	r := &rig{env: e, hub: hub, sched: scheduler.New(e.Store, scheduler.Config{Clock: e.Clock},
		scheduler.WithPlacementOptions(placement.WithPreemptAfter(0)))}
	r.disp = r.dispatcher(dispatch.Config{Clock: e.Clock, PrepareTimeout: 10 * time.Second})
	return r
}

// dispatcher returns a started dispatcher on the rig's store and hub.
func (r *rig) dispatcher(cfg dispatch.Config) *dispatch.Dispatcher {
	d := dispatch.New(r.Store, r.hub, cfg)
	d.Start(r.Ctx)
	return d
}

// synced waits until d's member pod cache holds every pod of the hub
// cluster at its current version.
func (r *rig) synced(d *dispatch.Dispatcher) {
	r.T.Helper()
	want := map[string]string{}
	l, err := r.hub.CoreV1().Pods(metav1.NamespaceAll).List(r.Ctx, metav1.ListOptions{})
	if err != nil {
		r.T.Fatal(err)
	}
	for _, p := range l.Items {
		want[p.Name] = dispatch.Fingerprint(&p)
	}
	err = wait.PollUntilContextTimeout(r.Ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, err := dispatch.CachedPods(d)
		return err == nil && got != nil && maps.Equal(got, want), err
	})
	if err != nil {
		r.T.Fatalf("member pod cache did not catch up: %v", err)
	}
}

func (r *rig) cycle() scheduler.Result {
	r.T.Helper()
	res, err := r.sched.Cycle(r.Ctx, nil)
	if err != nil {
		r.T.Fatal(err)
	}
	return res
}

func (r *rig) pass() {
	r.T.Helper()
	r.synced(r.disp)
	if err := r.disp.Pass(r.Ctx); err != nil {
		r.T.Fatal(err)
	}
}

func (r *rig) pods(job string) []corev1.Pod {
	r.T.Helper()
	l, err := r.hub.CoreV1().Pods(metav1.NamespaceAll).List(r.Ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		r.T.Fatal(err)
	}
	return l.Items
}

// agent plays every agent: it sets the Prepared condition (or refuses the
// member with index refuse) and, on committed pods, the phase. A pod is
// committed once a member of its epoch on its cluster carries the commit
// stamp, as the agent lifts all their gates on one stamp (agent/gang).
func (r *rig) agent(job string, refuse int, phase corev1.PodPhase) {
	r.T.Helper()
	pods := r.pods(job)
	stamped := map[string]bool{} // cluster/epoch
	for _, p := range pods {
		if c := p.Annotations[v1alpha1.AnnotationCommit]; c != "" && c == p.Annotations[v1alpha1.AnnotationEpoch] {
			stamped[p.Labels[v1alpha1.LabelCluster]+"/"+c] = true
		}
	}
	for _, p := range pods {
		p := p
		ok := corev1.ConditionTrue
		if p.Labels[v1alpha1.LabelMember] == strconv.Itoa(refuse) {
			ok = corev1.ConditionFalse
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: ok, Reason: "NoFit"}}
		if stamped[p.Labels[v1alpha1.LabelCluster]+"/"+p.Annotations[v1alpha1.AnnotationEpoch]] && phase != "" {
			p.Status.Phase = phase
		}
		if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
			r.T.Fatal(err)
		}
	}
}

func (r *rig) reserved(job string) bool {
	_, _, err := ledger.New(r.Store).Get(r.Ctx, job)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.T.Fatal(err)
	}
	return err == nil
}

func cond(j *v1alpha1.Job, t string) *metav1.Condition {
	return meta.FindStatusCondition(j.Status.Conditions, t)
}

func TestGangPreparesCommitsAndRuns(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	pods := r.pods("llama")
	if len(pods) != 2 {
		t.Fatalf("%d member pods, want 2", len(pods))
	}
	p := pods[0]
	env := map[string]string{}
	for _, e := range p.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	member, _ := strconv.Atoi(p.Labels[v1alpha1.LabelMember])
	if p.Spec.NodeName != "shoal-eu1-h100-80gb" || p.Annotations[v1alpha1.AnnotationTargetNode] == "" ||
		p.Annotations[v1alpha1.AnnotationEpoch] != "1" || env["SHOAL_GANG_SIZE"] != "2" || env["WORLD_SIZE"] != "16" ||
		env["MASTER_ADDR"] != "llama-0.llama."+v1alpha1.LocalMemberNamespace("research") || env["RANK"] != strconv.Itoa(8*member) ||
		env["NODE_RANK"] != p.Labels[v1alpha1.LabelMember] || p.Spec.Subdomain != "llama" ||
		p.Annotations[v1alpha1.AnnotationQueue] != "research" || p.Annotations[v1alpha1.AnnotationPodSecurity] != string(v1alpha1.DefaultPodSecurityLevel) ||
		p.Annotations[v1alpha1.AnnotationSliceSize] != "2" || p.Annotations[v1alpha1.AnnotationDevices] != "" ||
		p.Annotations[v1alpha1.AnnotationComputeDomain] != "" {
		t.Fatalf("member pod %s: node %s annotations %v env %v", p.Name, p.Spec.NodeName, p.Annotations, env)
	}
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{}); err != nil {
		t.Fatalf("rendezvous service: %v", err)
	}
	r.pass()
	if p := r.pods("llama")[0]; p.Annotations[v1alpha1.AnnotationCommit] != "" {
		t.Fatal("committed before every member was prepared")
	}
	r.agent("llama", -1, "")
	r.pass()
	// One stamp per cluster: its herald, the member of the lowest index.
	herald, other := v1alpha1.MemberPodName("llama", 1, 0), v1alpha1.MemberPodName("llama", 1, 1)
	if st := stamps(r.pods("llama")); st[herald] != "1" || st[other] != "" {
		t.Fatalf("commit stamps %v, want only %s's", st, herald)
	}
	// A member not running stragglersAfter (10 s) after the commit gets its own.
	r.Clock.Step(9 * time.Second)
	r.pass()
	if st := stamps(r.pods("llama")); st[other] != "" {
		t.Fatalf("commit stamps 9 s after the commit %v, want only %s's", st, herald)
	}
	r.Clock.Step(time.Second)
	r.pass()
	if st := stamps(r.pods("llama")); st[other] != "1" {
		t.Fatalf("commit stamps 10 s after the commit %v, want both", st)
	}
	r.agent("llama", -1, corev1.PodRunning)
	r.pass()
	j := r.Job("llama")
	if j.Status.Phase != v1alpha1.JobRunning || j.Status.StartTime == nil || j.Status.Members[1].Phase != v1alpha1.MemberRunning {
		t.Fatalf("job %s members %+v", j.Status.Phase, j.Status.Members)
	}
	if c := cond(j, v1alpha1.JobConditionDispatched); c == nil || c.Reason != v1alpha1.ReasonCommitted {
		t.Fatalf("dispatched condition %+v", c)
	}
	r.agent("llama", -1, corev1.PodSucceeded)
	r.pass() // Succeeded
	r.pass() // members deleted
	r.pass() // reservation released
	if j := r.Job("llama"); j.Status.Phase != v1alpha1.JobSucceeded || r.reserved("llama") || len(r.pods("llama")) != 0 {
		t.Fatalf("after success: phase %s reserved %v pods %d", j.Status.Phase, r.reserved("llama"), len(r.pods("llama")))
	}
}

func TestPrepareFailureAbortsWholeGangAndRequeues(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	r.agent("llama", 1, "")
	r.pass() // abort decided, members deleted
	r.pass() // none left: reservation released, job requeued
	j := r.Job("llama")
	if len(r.pods("llama")) != 0 || r.reserved("llama") || j.Status.Phase != v1alpha1.JobPending {
		t.Fatalf("after abort: pods %d reserved %v phase %s", len(r.pods("llama")), r.reserved("llama"), j.Status.Phase)
	}
	if c := cond(j, v1alpha1.JobConditionPlaced); c == nil || c.Reason != "PrepareFailed" {
		t.Fatalf("placed condition %+v", c)
	}
	if res := r.cycle(); len(res.Placed) != 0 {
		t.Fatal("placed again during its backoff")
	}
	r.Clock.Step(3 * time.Second)
	if res := r.cycle(); len(res.Placed) != 1 || r.Job("llama").Status.Epoch != 2 {
		t.Fatalf("not placed again after the backoff: %+v", res)
	}
	r.pass()
	if ps := r.pods("llama"); len(ps) != 2 || ps[0].Labels[v1alpha1.LabelEpoch] != "2" {
		t.Fatalf("epoch 2 members: %d", len(ps))
	}
}

// placedRig is a rig with one cluster eu1 of one 8-GPU node, job (one
// member of 8 GPUs) placed there and one dispatch pass run.
func placedRig(t *testing.T, job string) *rig {
	t.Helper()
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	r.Submit(job, 1, 8)
	r.cycle()
	r.pass()
	return r
}

func TestPrepareDeadlineAborts(t *testing.T) {
	r := placedRig(t, "slow")
	r.Clock.Step(11 * time.Second)
	r.pass()
	r.pass()
	if c := cond(r.Job("slow"), v1alpha1.JobConditionPlaced); c == nil || c.Reason != "PrepareTimeout" || r.reserved("slow") {
		t.Fatalf("placed condition %+v", c)
	}
}

func TestMemberFailureRestartsWholeGang(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8, func(j *v1alpha1.Job) { one := int32(1); j.Spec.FailurePolicy.MaxRestarts = &one })
	for round := 1; round <= 2; round++ {
		r.cycle()
		r.pass()
		r.agent("llama", -1, "")
		r.pass()
		r.agent("llama", -1, corev1.PodRunning)
		r.pass()
		if ph := r.Job("llama").Status.Phase; ph != v1alpha1.JobRunning {
			t.Fatalf("round %d: phase %s", round, ph)
		}
		p := r.pods("llama")[0]
		p.Status.Phase = corev1.PodFailed
		if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		r.pass()
		if n := len(r.pods("llama")); n != 0 {
			t.Fatalf("round %d: %d members left after a member failed", round, n)
		}
		r.pass()
	}
	j := r.Job("llama")
	if j.Status.Phase != v1alpha1.JobFailed || j.Status.Restarts != 1 || r.reserved("llama") {
		t.Fatalf("phase %s restarts %d", j.Status.Phase, j.Status.Restarts)
	}
}

func TestCancelRemovesEveryMember(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	if _, _, err := r.Jobs.Cancel(r.Ctx, "llama"); err != nil {
		t.Fatal(err)
	}
	r.pass()
	r.pass()
	if len(r.pods("llama")) != 0 || r.reserved("llama") {
		t.Fatalf("after cancel: pods %d reserved %v", len(r.pods("llama")), r.reserved("llama"))
	}
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{}); err == nil {
		t.Fatal("rendezvous service left behind")
	}
	if l, err := r.hub.DiscoveryV1().EndpointSlices(ns).List(r.Ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("rendezvous endpoint slices left behind: %v (%v)", l, err)
	}
}

func TestPreemptionHonoursGraceAndRequeues(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	r.Submit("spot", 1, 8, func(j *v1alpha1.Job) {
		j.Spec.PriorityClass = v1alpha1.PrioritySpot
		g := int64(45)
		j.Spec.Preemption.GracePeriodSeconds = &g
	})
	r.cycle()
	r.pass()
	r.agent("spot", -1, "")
	r.pass()
	r.agent("spot", -1, corev1.PodRunning)
	r.pass()
	r.Submit("prod", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PriorityProduction })
	if res := r.cycle(); len(res.Preempted) != 1 {
		t.Fatalf("preempted %v", res.Preempted)
	}
	var grace *int64
	r.hub.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		grace = a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds
		return false, nil, nil
	})
	r.pass()
	if grace == nil || *grace != 45 {
		t.Fatalf("victim deleted with grace %v, want 45", grace)
	}
	r.pass()
	if j := r.Job("spot"); j.Status.Phase != v1alpha1.JobPending || r.reserved("spot") {
		t.Fatalf("victim phase %s", j.Status.Phase)
	}
	if res := r.cycle(); len(res.Placed) != 1 || res.Placed[0] != "prod" {
		t.Fatalf("preemptor not placed: %+v", res)
	}
}

// TestHubRestartMidCommitFinishesTheCommit fails the commit stamp on the
// cluster's herald; a fresh dispatcher (a restarted hub) stamps it.
func TestHubRestartMidCommitFinishesTheCommit(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	r.agent("llama", -1, "")
	r.hub.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == v1alpha1.MemberPodName("llama", 1, 0) {
			return true, nil, errors.New("hub crashed")
		}
		return false, nil, nil
	})
	r.synced(r.disp)
	if err := r.disp.Pass(r.Ctx); err == nil {
		t.Fatal("pass did not fail")
	}
	r.hub.ReactionChain = r.hub.ReactionChain[1:]
	restarted := r.dispatcher(dispatch.Config{Clock: r.Clock})
	r.synced(restarted)
	if err := restarted.Pass(r.Ctx); err != nil {
		t.Fatal(err)
	}
	if st := stamps(r.pods("llama")); st[v1alpha1.MemberPodName("llama", 1, 0)] != "1" {
		t.Fatalf("herald not committed after the restart: %v", st)
	}
}

// stamps returns the commit stamp of each pod, by name.
func stamps(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = p.Annotations[v1alpha1.AnnotationCommit]
	}
	return out
}

// TestHubRestartMidAbortFinishesTheAbort: after the abort is decided, a
// restarted hub never recreates the deleted members.
func TestHubRestartMidAbortFinishesTheAbort(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	r.agent("llama", 1, "")
	r.hub.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == v1alpha1.MemberPodName("llama", 1, 1) {
			return true, nil, errors.New("hub crashed")
		}
		return false, nil, nil
	})
	r.synced(r.disp)
	_ = r.disp.Pass(r.Ctx)
	if n := len(r.pods("llama")); n != 1 {
		t.Fatalf("%d members after the half-done abort, want 1", n)
	}
	r.hub.ReactionChain = r.hub.ReactionChain[1:]
	restarted := r.dispatcher(dispatch.Config{Clock: r.Clock})
	for range 2 {
		r.synced(restarted)
		if err := restarted.Pass(r.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.pods("llama")); n != 0 || r.reserved("llama") || r.Job("llama").Status.Phase != v1alpha1.JobPending {
		t.Fatalf("after restart: %d members, reserved %v", n, r.reserved("llama"))
	}
}

// TestPassReadsMembersFromTheCache: passes take the member pods from the
// informer, not from a list of the API server each time.
func TestPassReadsMembersFromTheCache(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	for step := range 3 {
		r.synced(r.disp)
		r.hub.ClearActions()
		if err := r.disp.Pass(r.Ctx); err != nil {
			t.Fatal(err)
		}
		for _, a := range r.hub.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
				t.Fatalf("pass %d listed the member pods from the API server", step)
			}
		}
		r.agent("llama", -1, "")
	}
	if p := r.pods("llama")[0]; p.Annotations[v1alpha1.AnnotationCommit] != "1" {
		t.Fatalf("not committed from the cache: %v", p.Annotations)
	}
}

// TestPassBeforeStart: a dispatcher without its cache refuses to pass.
func TestPassBeforeStart(t *testing.T) {
	r := newRig(t)
	d := dispatch.New(r.Store, r.hub, dispatch.Config{Clock: r.Clock})
	if err := d.Pass(r.Ctx); !errors.Is(err, dispatch.ErrNotStarted) {
		t.Fatalf("err = %v, want ErrNotStarted", err)
	}
}

// TestDecisionOfAnOlderHubIsFinished: a job whose commit an older hub
// recorded only as the Dispatched condition gets its commit stamped, not a
// new prepare.
func TestDecisionOfAnOlderHubIsFinished(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	r.agent("llama", -1, "")
	raw := store.NewCollection(r.Store, "jobs", store.JSONCodec[*v1alpha1.Job]())
	_, _, err := raw.GuaranteedUpdate(r.Ctx, "llama", func(j *v1alpha1.Job) (*v1alpha1.Job, error) {
		j.Status.Dispatch = nil
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionDispatched,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCommitted, LastTransitionTime: metav1.NewTime(r.Clock.Now())})
		return j, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.pass()
	if st := stamps(r.pods("llama")); st[v1alpha1.MemberPodName("llama", 1, 0)] != "1" {
		t.Fatalf("herald not committed: %v", st)
	}
}
