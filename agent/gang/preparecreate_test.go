// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// mutated is the local pod the pod syncer would create for hub, mutated by
// g.
func mutated(t *testing.T, g *gang.Gate, hub *corev1.Pod) *corev1.Pod {
	t.Helper()
	lp := hub.DeepCopy()
	if err := g.Mutate(hub, lp); err != nil {
		t.Fatal(err)
	}
	return lp
}

// prepareCreate is PrepareCreate with a create that made nothing, for a
// gate without a Creator (nothing is held).
func prepareCreate(t *testing.T, g *gang.Gate, hub, local *corev1.Pod) {
	t.Helper()
	done, hold := g.PrepareCreate(t.Context(), hub, local)
	if hold {
		t.Fatal("held by a gate without a creator")
	}
	done(nil)
}

func markedPrepared(p *corev1.Pod) bool {
	return p.Annotations[v1alpha1.AnnotationPrepared] == string(corev1.ConditionTrue)
}

// TestPrepareCreateMarksAFittingMember: a gated member that fits its node
// is created prepared, and counts on the node from then on, even while the
// cache does not show its pod; a member that does not fit is left to Run,
// unmarked. A created pod the cache never shows stops counting after a
// while (it was deleted before the cache saw it).
func TestPrepareCreateMarksAFittingMember(t *testing.T) {
	clock := testclock.NewFakeClock(time.Unix(1000, 0))
	local := fake.NewClientset(gpuNode())
	g := gang.New(syncedCache(t, local), gang.WithClock(clock))
	if err := g.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := hubPod("a", "1", "") // 8 GPUs on the 8-GPU n1
	la := mutated(t, g, a)
	done, _ := g.PrepareCreate(t.Context(), a, la)
	if !markedPrepared(la) {
		t.Fatal("a fitting member was not created prepared")
	}
	// The create, as the syncer makes it; the fake cluster is not told,
	// so the cache never shows the pod.
	created := la.DeepCopy()
	created.UID = types.UID("uid-a")
	created.CreationTimestamp = metav1.NewTime(clock.Now())
	done(created)
	if c := v1alpha1.PreparedCondition(created); c == nil || c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonFits {
		t.Fatalf("the created pod's Prepared condition: %+v", c)
	}

	b := hubPod("b", "1", "")
	b.Labels[v1alpha1.LabelJob] = "other"
	lb := mutated(t, g, b)
	prepareCreate(t, g, b, lb)
	if markedPrepared(lb) {
		t.Fatal("a member was created prepared on GPUs a prepared member not yet in the cache holds")
	}

	clock.Step(time.Minute) // a's pod never showed up: deleted before the cache saw it
	lb = mutated(t, g, b)
	prepareCreate(t, g, b, lb)
	if !markedPrepared(lb) {
		t.Fatal("a member that never showed up still holds the node's GPUs")
	}
}

// TestPrepareCreateHoldsTheNodeUntilCreated: the next member on the node
// waits for the create of the one before (which it must count).
func TestPrepareCreateHoldsTheNodeUntilCreated(t *testing.T) {
	g, _ := newGate(t, gpuNode())
	a, b := hubPod("a", "1", ""), hubPod("b", "1", "")
	b.Labels[v1alpha1.LabelJob] = "other"
	la, lb := mutated(t, g, a), mutated(t, g, b)
	done, _ := g.PrepareCreate(t.Context(), a, la)
	returned := make(chan bool)
	go func() {
		prepareCreate(t, g, b, lb)
		returned <- markedPrepared(lb)
	}()
	select {
	case <-returned:
		t.Fatal("a second member was prepared on the node while the first one's create was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	created := la.DeepCopy()
	created.UID = "uid-a"
	done(created)
	if <-returned {
		t.Fatal("the second member was created prepared on the first one's GPUs")
	}
}

// TestPrepareCreateLeavesTheRestToRun: members of a compute domain,
// members committed already, and members that do not fit are created as
// they are (Run prepares the gated ones after the create).
func TestPrepareCreateLeavesTheRestToRun(t *testing.T) {
	domain := hubPod("d", "1", "")
	domain.Annotations[v1alpha1.AnnotationComputeDomain] = "clique-1"
	big := hubPod("big", "1", "")
	big.Spec.Containers[0].Resources = limits(map[string]int64{"nvidia.com/gpu": 16})
	for name, hub := range map[string]*corev1.Pod{
		"a compute-domain member":    domain,
		"a committed member":         hubPod("c", "1", "1"),
		"a member that does not fit": big,
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := newGate(t, gpuNode())
			lp := mutated(t, g, hub)
			prepareCreate(t, g, hub, lp)
			if markedPrepared(lp) {
				t.Fatal("created prepared")
			}
			// The node is free again for the next member.
			next := hubPod("next", "1", "")
			next.Labels[v1alpha1.LabelJob] = "next"
			ln := mutated(t, g, next)
			prepareCreate(t, g, next, ln)
			if !markedPrepared(ln) {
				t.Fatal("the next member on the node was not prepared")
			}
		})
	}
}

// TestPreparedMemberBoundCountsOnce: a member created prepared that the
// cache shows bound already (the create's answer came after the cache's
// event) counts once on its node, as a bound pod, not again from memory.
func TestPreparedMemberBoundCountsOnce(t *testing.T) {
	local := fake.NewClientset(gpuNode())
	c := syncedCache(t, local)
	g := gang.New(c) // Run not started: no cache event forgets a
	if err := g.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	half := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Resources = limits(map[string]int64{"nvidia.com/gpu": 4})
		return p
	}
	a := half(hubPod("a", "1", ""))
	la := mutated(t, g, a)
	done, _ := g.PrepareCreate(t.Context(), a, la)
	if !markedPrepared(la) {
		t.Fatal("a not prepared")
	}
	created := la.DeepCopy()
	created.UID = "uid-a"
	done(created) // remembered: the cache does not show it yet
	bound := created.DeepCopy()
	bound.Spec.NodeName, bound.Spec.SchedulingGates = "n1", nil
	if _, err := local.CoreV1().Pods("ns").Create(t.Context(), bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, c, "ns", "a")
	b := half(hubPod("b", "1", ""))
	b.Labels[v1alpha1.LabelJob] = "other"
	lb := mutated(t, g, b)
	prepareCreate(t, g, b, lb)
	if !markedPrepared(lb) {
		t.Fatal("4 free GPUs refused: the bound member counted twice")
	}
}
