// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// creator is the pod syncer's part in a hold: it keeps the held local
// pods and creates them when the gate asks.
type creator struct {
	local *fake.Clientset
	mu    sync.Mutex
	held  map[string]*corev1.Pod // by hub pod name (hub and local names agree here)
	asked []string
}

func (c *creator) keep(lp *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[lp.Name] = lp.DeepCopy()
}

func (c *creator) CreateHeld(ctx context.Context, _, name string) (*corev1.Pod, error) {
	c.mu.Lock()
	lp := c.held[name]
	delete(c.held, name)
	c.asked = append(c.asked, name)
	c.mu.Unlock()
	if lp == nil {
		return nil, nil
	}
	var gates []corev1.PodSchedulingGate
	for _, g := range lp.Spec.SchedulingGates {
		if g.Name != v1alpha1.SchedulingGate {
			gates = append(gates, g)
		}
	}
	lp.Spec.SchedulingGates = gates
	return c.local.CoreV1().Pods(lp.Namespace).Create(ctx, lp, metav1.CreateOptions{})
}

// holdMember mutates and prepares hub's member, held, as the pod syncer
// does, and has cr keep it.
func holdMember(t *testing.T, g *gang.Gate, cr *creator, hub *corev1.Pod) {
	t.Helper()
	lp := mutated(t, g, hub)
	if _, hold := g.PrepareCreate(t.Context(), hub, lp); !hold || !markedPrepared(lp) {
		t.Fatalf("%s: held %v, marked prepared %v", hub.Name, hold, markedPrepared(lp))
	}
	cr.keep(lp)
}

func quarter(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].Resources = limits(map[string]int64{fedinv.ResourceGPU: 2})
	return p
}

// runningGateWithCreator is a running Gate on a fake cluster with n1,
// whose held members cr keeps and creates.
func runningGateWithCreator(t *testing.T) (*gang.Gate, *creator, *fake.Clientset) {
	t.Helper()
	local := fake.NewClientset(gpuNode())
	g := gang.New(syncedCache(t, local))
	cr := &creator{local: local, held: map[string]*corev1.Pod{}}
	g.SetCreator(cr)
	go func() { _ = g.Run(t.Context()) }()
	<-g.Loaded()
	return g, cr, local
}

// TestHeldMembersAreCreatedAtTheCommit: with a Creator, a prepared member
// is held (no local pod) and its GPUs count on its node; the herald's
// commit creates it and every held sibling of the epoch, ungated, and a
// member whose hub pod is deleted meanwhile is released, not created.
func TestHeldMembersAreCreatedAtTheCommit(t *testing.T) {
	ctx := t.Context()
	g, cr, local := runningGateWithCreator(t)

	m0, m1, m2 := quarter(hubPod("m0", "1", "")), quarter(hubPod("m1", "1", "")), quarter(hubPod("m2", "1", ""))
	for _, hub := range []*corev1.Pod{m0, m1, m2} {
		holdMember(t, g, cr, hub)
	}
	if pods, _ := local.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Fatalf("%d local pods before the commit", len(pods.Items))
	}
	// 6 of n1's 8 GPUs are held: another job's 4-GPU member does not fit.
	other := hubPod("other-0", "1", "")
	other.Labels[v1alpha1.LabelJob] = "other"
	other.Spec.Containers[0].Resources = limits(map[string]int64{fedinv.ResourceGPU: 4})
	lo := mutated(t, g, other)
	if done, hold := g.PrepareCreate(ctx, other, lo); hold || markedPrepared(lo) {
		t.Fatal("a member was prepared on GPUs held members count")
	} else {
		done(nil)
	}
	// m2's hub pod is deleted (the gang was aborted there): released.
	g.Release(m2)
	other.Spec.Containers[0].Resources = limits(map[string]int64{fedinv.ResourceGPU: 6})
	lo = mutated(t, g, other)
	if done, hold := g.PrepareCreate(ctx, other, lo); hold || markedPrepared(lo) {
		t.Fatal("6 GPUs fit where 4 of 8 are held")
	} else {
		done(nil)
	}
	other.Spec.Containers[0].Resources = limits(map[string]int64{fedinv.ResourceGPU: 4})
	lo = mutated(t, g, other)
	if _, hold := g.PrepareCreate(ctx, other, lo); !hold {
		t.Fatal("4 GPUs did not fit where m2's 2 were released")
	}

	if err := g.Commit(ctx, quarter(hubPod("m1", "1", "1"))); err != nil { // m1 is the herald
		t.Fatal(err)
	}
	if _, err := local.CoreV1().Pods("ns").Get(ctx, "m1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the herald's local pod not created when Commit returned: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range []string{"m0", "m1"} {
		for {
			lp, err := local.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				if gated(lp) || !markedPrepared(lp) {
					t.Fatalf("%s created gated %v, marked prepared %v", name, gated(lp), markedPrepared(lp))
				}
				break
			}
			if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				t.Fatalf("%s not created after the commit: %v", name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // what the create queue would do wrongly, it has done by now
	for _, name := range []string{"m2", "other-0"} {
		if _, err := local.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s created (%v): released, or of a job not committed", name, err)
		}
	}
}

// TestNoHoldAfterTheCommit: a member whose epoch's commit reached the agent
// before its prepare is created at once (gated, its gate lifted as a
// sibling's), not held for a commit that came already.
func TestNoHoldAfterTheCommit(t *testing.T) {
	ctx := t.Context()
	g, cr, _ := runningGateWithCreator(t)
	holdMember(t, g, cr, quarter(hubPod("m0", "1", "")))
	late := quarter(hubPod("m1", "1", ""))
	ll := mutated(t, g, late) // gated: no commit yet
	if err := g.Commit(ctx, quarter(hubPod("m0", "1", "1"))); err != nil {
		t.Fatal(err)
	}
	done, hold := g.PrepareCreate(ctx, late, ll)
	if hold {
		t.Fatal("held after its epoch's commit")
	}
	done(nil)
}
