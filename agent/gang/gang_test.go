// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// newGate returns a Gate on a fake cluster holding objs, with its cache
// synced (Run, which prepares on its own, is not started).
func newGate(t *testing.T, objs ...runtime.Object) (*gang.Gate, *fake.Clientset) {
	t.Helper()
	local := fake.NewClientset(objs...)
	g := gang.New(syncedCache(t, local))
	if err := g.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return g, local
}

// syncedCache is a running cache of the fake cluster local, synced and
// watching its pods (the fake drops the events of objects created between
// an informer's list and its watch).
func syncedCache(t *testing.T, local *fake.Clientset) *cluster.Cache {
	t.Helper()
	watching := make(chan struct{})
	var once sync.Once
	local.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	c, err := cluster.New(local)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(t.Context()) }()
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("cache not synced")
	}
	<-watching
	return c
}

func hubPod(name, epoch, commit string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels:      map[string]string{v1alpha1.LabelJob: "llama"},
		Annotations: map[string]string{v1alpha1.AnnotationEpoch: epoch, v1alpha1.AnnotationTargetNode: "n1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fedinv.ResourceGPU: resource.MustParse("8")}}}}}}
	if commit != "" {
		p.Annotations[v1alpha1.AnnotationCommit] = commit
	}
	return p
}

func gated(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == v1alpha1.SchedulingGate {
			return true
		}
	}
	return false
}

func TestMutate(t *testing.T) {
	for name, tc := range map[string]struct {
		pods      []*corev1.Pod // mutated in order; the last one is checked
		wantGate  bool
		wantStale bool
	}{
		"member gets the gate":                   {pods: []*corev1.Pod{hubPod("a", "1", "")}, wantGate: true},
		"committed member (agent restart)":       {pods: []*corev1.Pod{hubPod("a", "2", "2")}},
		"stale epoch refused":                    {pods: []*corev1.Pod{hubPod("a", "3", ""), hubPod("b", "2", "")}, wantStale: true},
		"newer epoch accepted":                   {pods: []*corev1.Pod{hubPod("a", "1", ""), hubPod("b", "2", "")}, wantGate: true},
		"not a gang member: untouched, no error": {pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := newGate(t)
			var err error
			var local *corev1.Pod
			for _, p := range tc.pods {
				local = p.DeepCopy()
				err = g.Mutate(p, local)
			}
			if tc.wantStale != errors.Is(err, gang.ErrStaleEpoch) || !tc.wantStale && err != nil {
				t.Fatalf("err %v, want stale %v", err, tc.wantStale)
			}
			if !tc.wantStale && gated(local) != tc.wantGate {
				t.Fatalf("gated %v, want %v", gated(local), tc.wantGate)
			}
		})
	}
}

// gpuNode is the 8-GPU node n1 the gate tests prepare members on.
func gpuNode() *corev1.Node { return testnode.New("n1").Allocatable(fedinv.ResourceGPU, 8).Obj() }

func TestPrepareAndCommit(t *testing.T) {
	for name, tc := range map[string]struct {
		occupied bool
		want     corev1.ConditionStatus
		reason   string
	}{
		"fits":                                {want: corev1.ConditionTrue, reason: "Fits"},
		"a local pod took the GPUs meanwhile": {occupied: true, want: corev1.ConditionFalse, reason: "InsufficientGPUs"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			objs := []runtime.Object{gpuNode()}
			if tc.occupied {
				squatter := hubPod("squatter", "1", "")
				squatter.Labels, squatter.Annotations = nil, nil
				squatter.Spec.NodeName = "n1"
				objs = append(objs, squatter)
			}
			g, local := newGate(t, objs...)
			hub := hubPod("m0", "1", "")
			lp := hub.DeepCopy()
			if err := g.Mutate(hub, lp); err != nil {
				t.Fatal(err)
			}
			lp, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Prepare(ctx, lp); err != nil {
				t.Fatal(err)
			}
			lp, _ = local.CoreV1().Pods("ns").Get(ctx, "m0", metav1.GetOptions{})
			c := lp.Status.Conditions[len(lp.Status.Conditions)-1]
			if c.Type != v1alpha1.PodConditionPrepared || c.Status != tc.want || c.Reason != tc.reason {
				t.Fatalf("condition %+v, want %s %s", c, tc.want, tc.reason)
			}
			if err := g.Commit(ctx, hubPod("m0", "1", "1")); err != nil {
				t.Fatal(err)
			}
			lp, _ = local.CoreV1().Pods("ns").Get(ctx, "m0", metav1.GetOptions{})
			if gated(lp) {
				t.Fatal("gate not lifted by the commit")
			}
		})
	}
}

func TestCommitRefusesStaleEpoch(t *testing.T) {
	g, _ := newGate(t)
	if err := g.Mutate(hubPod("a", "5", ""), hubPod("a", "5", "")); err != nil {
		t.Fatal(err)
	}
	if err := g.Commit(context.Background(), hubPod("old", "4", "4")); !errors.Is(err, gang.ErrStaleEpoch) {
		t.Fatalf("err %v, want ErrStaleEpoch", err)
	}
}

// TestPrepareWaitsForTerminatingPods: GPUs held by a pod being deleted (a
// preemption victim in its grace period) make the member wait, not fail.
func TestPrepareWaitsForTerminatingPods(t *testing.T) {
	ctx := context.Background()
	victim := hubPod("victim", "1", "")
	victim.Labels, victim.Annotations = nil, nil
	victim.Spec.NodeName = "n1"
	now := metav1.Now()
	victim.DeletionTimestamp, victim.Finalizers = &now, []string{"test"}
	g, local := newGate(t, gpuNode(), victim)
	hub := hubPod("m0", "1", "")
	lp := hub.DeepCopy()
	if err := g.Mutate(hub, lp); err != nil {
		t.Fatal(err)
	}
	lp, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Prepare(ctx, lp); err == nil {
		t.Fatal("prepared while the victim still holds the GPUs")
	}
	lp, _ = local.CoreV1().Pods("ns").Get(ctx, "m0", metav1.GetOptions{})
	if len(lp.Status.Conditions) != 0 {
		t.Fatalf("reported %+v; want no condition yet", lp.Status.Conditions)
	}
}

// TestOneCommitLiftsEveryMemberOfItsEpoch: the first commit of an epoch
// to reach the agent lifts the gate of every local member of that epoch
// here, not only its own (the hub stamps a member only once the whole
// gang is committed); members of another job or an older epoch keep
// theirs.
//
// A sibling lift that fails is retried (m2's first patch fails), and a
// member gated before the commit but created after it reached the agent
// (m3: the cache did not show it to the commit) is lifted too, both
// without their own stamps (the hub stamps one member per cluster).
func TestOneCommitLiftsEveryMemberOfItsEpoch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	local := fake.NewClientset(gpuNode())
	var failed atomic.Bool
	local.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == "m2" && !failed.Swap(true) {
			return true, nil, errors.New("the API server is busy")
		}
		return false, nil, nil
	})
	c := syncedCache(t, local)
	g := gang.New(c)
	go func() { _ = g.Run(ctx) }()
	<-g.Loaded()
	other := hubPod("other-0", "1", "")
	other.Labels[v1alpha1.LabelJob] = "other"
	create := func(lp *corev1.Pod) {
		t.Helper()
		// Prepared already, as members are before a commit (the fake's
		// status update of a prepare would write the gate back).
		lp.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue}}
		if _, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, hub := range []*corev1.Pod{hubPod("old-0", "1", ""), hubPod("m0", "2", ""), hubPod("m1", "2", ""),
		hubPod("m2", "2", ""), other} {
		lp := hub.DeepCopy()
		if err := g.Mutate(hub, lp); err != nil {
			t.Fatal(err)
		}
		create(lp)
	}
	late := hubPod("m3", "2", "")
	lateLocal := late.DeepCopy()
	if err := g.Mutate(late, lateLocal); err != nil || !gated(lateLocal) {
		t.Fatalf("m3 mutated before the commit: gated %v, %v", gated(lateLocal), err)
	}
	// The cache holds every member but m3 before the commit comes (old-0
	// may be gone already: the gate removes the members of older epochs).
	waitCached(t, c, "ns", "m0", "m1", "m2", "other-0")
	if err := g.Commit(ctx, hubPod("m1", "2", "2")); err != nil {
		t.Fatal(err)
	}
	create(lateLocal)
	// m1's own gate is lifted when Commit returns, its siblings' soon after.
	want := map[string]bool{"m0": false, "m1": false, "m2": false, "m3": false, "old-0": true, "other-0": true}
	deadline := time.Now().Add(5 * time.Second)
	for name, w := range want {
		for {
			lp, err := local.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && name == "old-0" { // removed as stale, never lifted
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if gated(lp) == w {
				break
			}
			if name == "m1" || time.Now().After(deadline) {
				t.Fatalf("%s gated %v after the commit of m1 (epoch 2), want %v", name, gated(lp), w)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestMemberGateLiftedOnce: a member's own commit that comes while its
// siblings' commit lifts its gate (the cache still showing the gate) does
// not write again: one patch per member.
func TestMemberGateLiftedOnce(t *testing.T) {
	ctx := context.Background()
	local := fake.NewClientset(gpuNode())
	var mu sync.Mutex
	patches := map[string]int{}
	local.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		patches[a.(k8stesting.PatchAction).GetName()]++
		mu.Unlock()
		time.Sleep(50 * time.Millisecond) // the cache shows the gate meanwhile
		return false, nil, nil
	})
	c := syncedCache(t, local)
	g := gang.New(c)
	if err := g.Load(ctx); err != nil {
		t.Fatal(err)
	}
	names := []string{"m0", "m1", "m2", "m3"}
	for _, n := range names {
		hub := hubPod(n, "2", "")
		lp := hub.DeepCopy()
		if err := g.Mutate(hub, lp); err != nil {
			t.Fatal(err)
		}
		if _, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitCached(t, c, "ns", names...)
	var wg sync.WaitGroup
	for _, n := range names { // every member's own commit, at once
		wg.Go(func() {
			if err := g.Commit(ctx, hubPod(n, "2", "2")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, n := range names {
		lp, err := local.CoreV1().Pods("ns").Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if gated(lp) {
			t.Errorf("%s still gated after its commit", n)
		}
	}
	time.Sleep(200 * time.Millisecond) // sibling lifts still running would patch now
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if patches[n] != 1 {
			t.Errorf("%s patched %d times, want 1 (patches %v)", n, patches[n], patches)
		}
	}
}
