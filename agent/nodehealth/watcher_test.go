// SPDX-License-Identifier: Apache-2.0

package nodehealth_test

import (
	"context"

	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/nodehealth"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testnode"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

const grace = 10 * time.Second

// stop is one call to the Stopper.
type stop struct {
	pod, reason string
	zeroGrace   bool
}

type stops chan stop

func (s stops) Fail(_ context.Context, ns, name, reason, _ string, g *int64) error {
	s <- stop{pod: ns + "/" + name, reason: reason, zeroGrace: g != nil && *g == 0}
	return nil
}

// member is a running gang member bound to n1 asking for gpus whole GPUs.
func member(name string, gpus int64) *corev1.Pod {
	w := testpod.New(name).Namespace("ns").Node("n1").Phase(corev1.PodRunning).
		Label(v1alpha1.LabelJob, "llama").Label(v1alpha1.LabelManaged, "true").Annotation(v1alpha1.AnnotationEpoch, "1")
	if gpus > 0 {
		w = w.GPUs(gpus)
	}
	return w.Obj()
}

type fixture struct {
	cs    *fake.Clientset
	cache *cluster.Cache
	clock *clocktesting.FakeClock
	stops stops
}

func start(t *testing.T, cfg nodehealth.Config, objs ...*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{cs: fake.NewClientset(testnode.New("n1").GPUs(8).Obj()),
		clock: clocktesting.NewFakeClock(time.Now()), stops: make(stops, 8)}
	for _, p := range objs {
		if _, err := f.cs.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cluster.New(f.cs)
	if err != nil {
		t.Fatal(err)
	}
	f.cache = c
	go func() { _ = c.Run(t.Context()) }()
	cfg.Grace, cfg.Clock = grace, f.clock
	w := nodehealth.New(c, f.stops, cfg)
	go func() { _ = w.Run(t.Context()) }()
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("not synced")
	}
	return f
}

// node changes n1.
func (f *fixture) node(t *testing.T, change func(n *corev1.Node)) {
	t.Helper()
	n, err := f.cs.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(n)
	if _, err := f.cs.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitGrace waits until the watcher has a timer running (a failure within
// its grace), so that stepping the clock fires it.
func (f *fixture) waitGrace(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !f.clock.HasWaiters(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never waited out a grace")
		}
	}
}

func (f *fixture) none(t *testing.T, when string) {
	t.Helper()
	select {
	case s := <-f.stops:
		t.Fatalf("%s: stopped %+v", when, s)
	case <-time.After(200 * time.Millisecond):
	}
}

func (f *fixture) want(t *testing.T, want ...stop) {
	t.Helper()
	got := map[stop]bool{}
	for range want {
		select {
		case s := <-f.stops:
			got[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("stops %v, want %v", got, want)
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Fatalf("stops %v, want %v", got, want)
		}
	}
	f.none(t, "after the expected stops")
}

func setReady(st corev1.ConditionStatus) func(n *corev1.Node) {
	return func(n *corev1.Node) { n.Status.Conditions[0].Status = st }
}

// TestNodeFailureStopsMembersAfterGrace: each kind of failure stops the
// members it concerns once it outlasts the grace, and not before.
func TestNodeFailureStopsMembersAfterGrace(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg    nodehealth.Config
		change func(n *corev1.Node)
		want   []stop
	}{
		"NotReady": {change: setReady(corev1.ConditionFalse),
			want: []stop{{"ns/m0", v1alpha1.ReasonNodeNotReady, true}, {"ns/cpu", v1alpha1.ReasonNodeNotReady, true}}},
		"Ready Unknown": {change: setReady(corev1.ConditionUnknown),
			want: []stop{{"ns/m0", v1alpha1.ReasonNodeNotReady, true}, {"ns/cpu", v1alpha1.ReasonNodeNotReady, true}}},
		"GPUs removed from allocatable": {change: func(n *corev1.Node) {
			n.Status.Allocatable[testnode.ResourceGPU] = *resourceQty(7)
		}, want: []stop{{"ns/m0", v1alpha1.ReasonGPUUnhealthy, false}}},
		"a named taint": {cfg: nodehealth.Config{Taints: []string{"example.com/gpu-xid"}},
			change: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/gpu-xid", Effect: corev1.TaintEffectNoSchedule})
			}, want: []stop{{"ns/m0", v1alpha1.ReasonGPUUnhealthy, false}, {"ns/cpu", v1alpha1.ReasonGPUUnhealthy, false}}},
		"a named condition": {cfg: nodehealth.Config{Conditions: []string{"GPUFailure"}},
			change: func(n *corev1.Node) {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "GPUFailure", Status: corev1.ConditionTrue})
			}, want: []stop{{"ns/m0", v1alpha1.ReasonGPUUnhealthy, false}, {"ns/cpu", v1alpha1.ReasonGPUUnhealthy, false}}},
	} {
		t.Run(name, func(t *testing.T) {
			plain := member("plain", 0)
			plain.Labels, plain.Annotations = nil, nil // not a gang member: left alone
			f := start(t, tc.cfg, member("m0", 8), member("cpu", 0), plain)
			f.node(t, tc.change)
			f.waitGrace(t)
			f.clock.Step(grace - time.Second)
			f.none(t, "within the grace")
			f.clock.Step(time.Second)
			f.want(t, tc.want...)
		})
	}
}

// TestUnnamedTaintOrConditionIgnored: taints and conditions not named in
// the config, and a condition False, fail nothing.
func TestUnnamedTaintOrConditionIgnored(t *testing.T) {
	f := start(t, nodehealth.Config{Conditions: []string{"GPUFailure"}}, member("m0", 8))
	f.node(t, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule})
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "GPUFailure", Status: corev1.ConditionFalse},
			corev1.NodeCondition{Type: "Other", Status: corev1.ConditionTrue})
	})
	f.none(t, "after unnamed taints and conditions")
	if f.clock.HasWaiters() {
		t.Fatal("waiting out a grace for nothing")
	}
}

// TestRecoveryWithinGraceStopsNothing: a node Ready again within the grace
// keeps its members.
func TestRecoveryWithinGraceStopsNothing(t *testing.T) {
	f := start(t, nodehealth.Config{}, member("m0", 8))
	f.node(t, setReady(corev1.ConditionFalse))
	f.waitGrace(t)
	f.clock.Step(grace / 2)
	f.node(t, setReady(corev1.ConditionTrue))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, err := f.cache.Nodes().Get("n1"); err == nil && n.Status.Conditions[0].Status == corev1.ConditionTrue {
			break // the cache, and so the re-check, sees the node Ready
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never saw the node Ready again")
		}
	}
	f.clock.Step(grace)
	f.none(t, "after a recovery within the grace")
	// A new failure counts its grace afresh.
	f.node(t, setReady(corev1.ConditionFalse))
	f.waitGrace(t)
	f.clock.Step(grace - time.Second)
	f.none(t, "within the new grace")
	f.clock.Step(time.Second)
	f.want(t, stop{"ns/m0", v1alpha1.ReasonNodeNotReady, true})
}

// TestDeletedNodeStopsMembers: members of a deleted node stop after the grace.
func TestDeletedNodeStopsMembers(t *testing.T) {
	f := start(t, nodehealth.Config{}, member("m0", 8))
	if err := f.cs.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitGrace(t)
	f.clock.Step(grace)
	f.want(t, stop{"ns/m0", v1alpha1.ReasonNodeNotReady, true})
}

// TestPreparedMemberOfNotReadyNode: a prepared member targeting a node that
// turns NotReady is stopped too (it would never start there).
func TestPreparedMemberOfNotReadyNode(t *testing.T) {
	p := member("m0", 8)
	p.Spec.NodeName = ""
	p.Annotations[v1alpha1.AnnotationTargetNode] = "n1"
	p.Status.Phase = corev1.PodPending
	f := start(t, nodehealth.Config{}, p)
	f.node(t, func(n *corev1.Node) {
		n.Status.Allocatable[testnode.ResourceGPU] = *resourceQty(0) // not bound: holds no device
	})
	f.none(t, "GPUs lost under an unbound member")
	f.node(t, setReady(corev1.ConditionFalse))
	f.waitGrace(t)
	f.clock.Step(grace)
	f.want(t, stop{"ns/m0", v1alpha1.ReasonNodeNotReady, true})
}

func resourceQty(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
