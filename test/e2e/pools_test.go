// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pools"
)

// TestGPUPoolBindsCordonsAndDrains: a queue bound to a pool of one cluster
// (selected by the hub's cluster-name label) runs its jobs there only; the
// pool's status counts its nodes, GPUs and, scale-to-zero, its idle
// nodes; cordoned, a new job of the queue waits; drained, the running one
// is requeued; uncordoned, both run; a pool a queue is bound to cannot be
// deleted.
func TestGPUPoolBindsCordonsAndDrains(t *testing.T) {
	skipShort(t)
	ctx := t.Context()
	c := spare()
	ps := pools.New(h.st, h.queues)
	pool := &v1alpha1.GPUPool{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindGPUPool},
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-spare"},
		Spec: v1alpha1.GPUPoolSpec{ScaleToZero: true,
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelClusterName: c}}}}
	if _, _, err := ps.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Delete(context.WithoutCancel(ctx), "e2e-spare") })
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "pooled"}, Spec: v1alpha1.QueueSpec{Pools: []string{"e2e-spare"}}}
	if _, _, err := h.queues.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Unbind, so the pool can go.
		if q, rev, err := h.queues.Get(context.WithoutCancel(ctx), "pooled"); err == nil {
			q.Spec.Pools = nil
			_, _, _ = h.queues.Update(context.WithoutCancel(ctx), q, rev)
		}
	})
	grace := func(j *v1alpha1.Job) { g := int64(1); j.Spec.Preemption.GracePeriodSeconds = &g }

	submit(t, newJob("pooled-1", "pooled", 2, 8, grace))
	j := waitPhase(t, "pooled-1", v1alpha1.JobRunning, time.Minute)
	if cs := j.Status.Clusters(); len(cs) != 1 || cs[0] != c {
		t.Fatalf("pooled-1 runs on %v, want only the pool's cluster %s", cs, c)
	}
	eventually(t, 30*time.Second, "the pool's status", func(ctx context.Context) (bool, error) {
		p, _, err := ps.Get(ctx, "e2e-spare")
		if err != nil {
			return false, err
		}
		st := p.Status
		return st.Nodes == 16 && st.GPUs == 128 && st.UsedGPUs >= 16 && len(st.IdleNodes) > 0 && len(st.IdleNodes) <= 14 &&
				slices.Equal(st.Clusters, []string{c}) && slices.Equal(st.Queues, []string{"pooled"}),
			fmt.Errorf("status %+v", st)
	})

	// The pool is on its cluster's virtual nodes, on no other.
	eventually(t, 30*time.Second, "the pool label on the virtual nodes", func(ctx context.Context) (bool, error) {
		nodes, err := h.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelVirtual + "=true"})
		if err != nil {
			return false, err
		}
		var with, without int
		for _, n := range nodes.Items {
			labelled := n.Labels[pools.LabelPoolPrefix+"e2e-spare"] == "true"
			switch mine := n.Labels[v1alpha1.LabelCluster] == c; {
			case mine && labelled, !mine && !labelled:
				with++
			default:
				without++
			}
		}
		return with > 0 && without == 0, fmt.Errorf("%d virtual nodes labelled right, %d wrong", with, without)
	})

	// Cordoned: a new job of the queue waits (the other clusters are not its).
	setPool(t, ps, func(p *v1alpha1.GPUPool) { p.Spec.Cordoned = true })
	submit(t, newJob("pooled-2", "pooled", 1, 8, grace))
	holds(t, "pooled-2", v1alpha1.JobPending, 10*time.Second)

	// Drained: the running job is requeued.
	setPool(t, ps, func(p *v1alpha1.GPUPool) { p.Spec.Drain = true })
	waitPhase(t, "pooled-1", v1alpha1.JobPending, time.Minute)
	holds(t, "pooled-1", v1alpha1.JobPending, 5*time.Second)

	// Back: both run, in the pool's cluster.
	setPool(t, ps, func(p *v1alpha1.GPUPool) { p.Spec.Drain, p.Spec.Cordoned = false, false })
	for _, n := range []string{"pooled-1", "pooled-2"} {
		j := waitPhase(t, n, v1alpha1.JobRunning, time.Minute)
		if cs := j.Status.Clusters(); len(cs) != 1 || cs[0] != c {
			t.Fatalf("%s runs on %v, want %s", n, cs, c)
		}
	}
	eventually(t, 30*time.Second, "the drain's marks cleared", func(ctx context.Context) (bool, error) {
		cl, _, err := h.reg.GetCluster(ctx, c)
		if err != nil {
			return false, err
		}
		p, _, err := ps.Get(ctx, "e2e-spare")
		if err != nil {
			return false, err
		}
		return len(cl.Spec.DrainedNodes) == 0 && len(p.Status.Drained) == 0,
			fmt.Errorf("cluster drained nodes %v, pool drained %v", cl.Spec.DrainedNodes, p.Status.Drained)
	})
	if err := ps.Delete(ctx, "e2e-spare"); !errors.Is(err, errs.ErrFailedPrecondition) {
		t.Fatalf("deleting a pool a queue is bound to: %v, want FailedPrecondition", err)
	}
}

// setPool changes a pool's spec.
func setPool(t *testing.T, ps *pools.Service, fn func(*v1alpha1.GPUPool)) {
	t.Helper()
	p, rev, err := ps.Get(t.Context(), "e2e-spare")
	if err != nil {
		t.Fatal(err)
	}
	fn(p)
	if _, _, err := ps.Update(t.Context(), p, rev); err != nil {
		t.Fatal(err)
	}
}

// holds checks that a job stays in a phase for d.
func holds(t *testing.T, name string, phase v1alpha1.JobPhase, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if j := getJob(t, name); j.Status.Phase != phase {
			t.Fatalf("%s went %s within %s, want it to stay %s (conditions %+v)", name, j.Status.Phase, d, phase, j.Status.Conditions)
		}
	}
}
