// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// liftDue says whether local pod p is a gated member, outside a compute
// domain, of an epoch whose commit reached this agent: its gate is for the
// lift queue.
func (g *Gate) liftDue(p *corev1.Pod) bool {
	job, epoch, ok := member(p)
	if !ok || p.DeletionTimestamp != nil || !hasGate(p) || g.committedEpoch(job) != epoch {
		return false
	}
	_, domain := p.Annotations[v1alpha1.AnnotationComputeDomain]
	return !domain
}

// runLifts lifts the gates the lift queue holds, siblingLifts at once,
// until ctx ends.
func (g *Gate) runLifts(ctx context.Context) {
	runWorkers(siblingLifts, func() bool { return g.nextLift(ctx) })
}

// runWorkers runs next on n goroutines, each until next returns false, and
// returns when all have.
func runWorkers(n int, next func() bool) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for next() {
			}
		})
	}
	wg.Wait()
}

// nextLift lifts one queued gate; a failed lift is retried with backoff.
func (g *Gate) nextLift(ctx context.Context) bool {
	k, quit := g.lifts.Get()
	if quit {
		return false
	}
	defer g.lifts.Done(k)
	lp, err := g.cache.Pods().Pods(k.Namespace).Get(k.Name)
	if err != nil || !g.liftDue(lp) {
		g.lifts.Forget(k) // gone, lifted, or of another epoch
		return true
	}
	v := lp.Annotations[v1alpha1.AnnotationEpoch]
	epoch, _ := strconv.ParseInt(v, 10, 64)
	if _, err := g.lift(ctx, k.Namespace, k.Name, v, epoch); err != nil && !errors.Is(err, ErrStaleEpoch) {
		klog.FromContext(ctx).V(2).Info("gate of a committed member not lifted yet; retrying", "pod", k, "epoch", epoch, "err", err)
		g.lifts.AddRateLimited(k)
		return true
	}
	g.lifts.Forget(k)
	return true
}

// liftCall is one gate lift, shared by every caller that asks for it
// while it runs and remembered after it succeeded until the cache shows
// the gate gone. A member's gate is asked to be lifted twice at a commit
// (its siblings' first commit, commitSiblings, and its own stamp) while
// the cache still shows the gate: both wrote, and one write of the two
// failed, for about half the members of a gang.
type liftCall struct {
	done   chan struct{}
	lifted bool
	err    error
}

// liftPruneMin is how many lifts are remembered before the ones the cache
// shows are forgotten.
const liftPruneMin = 256

// lift removes the gang's scheduling gate from local pod ns/name of the
// committed epoch (its annotation value) and says whether this call did
// (false: there was none, or another call lifted it). It blocks on one or
// a few workload cluster writes, or on the same lift asked by another
// caller.
func (g *Gate) lift(ctx context.Context, ns, name, epochValue string, epoch int64) (bool, error) {
	k := ns + "/" + name + "@" + epochValue
	g.mu.Lock()
	c, ok := g.liftCalls[k]
	if !ok {
		c = &liftCall{done: make(chan struct{})}
		g.liftCalls[k] = c
		g.pruneLifts()
	}
	g.mu.Unlock()
	if ok {
		select {
		case <-c.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if c.err == nil {
			return false, nil
		}
		// It failed: forget it and try again.
		g.mu.Lock()
		if g.liftCalls[k] == c {
			delete(g.liftCalls, k)
		}
		g.mu.Unlock()
		return g.lift(ctx, ns, name, epochValue, epoch)
	}
	c.lifted, c.err = g.liftOnce(ctx, ns, name, epochValue, epoch)
	if c.err != nil || !c.lifted { // nothing for the cache to show
		g.mu.Lock()
		delete(g.liftCalls, k)
		g.mu.Unlock()
	}
	close(c.done)
	return c.lifted, c.err
}

// pruneLifts forgets the lifts done that the cache shows (the pod gone, of
// another epoch or without the gate) once more than liftPrune are
// remembered. Called with g.mu held.
func (g *Gate) pruneLifts() {
	if len(g.liftCalls) <= max(g.liftPrune, liftPruneMin) {
		return
	}
	for k, c := range g.liftCalls {
		select {
		case <-c.done:
		default:
			continue // in flight
		}
		pod, epoch, _ := strings.Cut(k, "@")
		ns, name, _ := strings.Cut(pod, "/")
		if p, err := g.cache.Pods().Pods(ns).Get(name); err != nil || p.Annotations[v1alpha1.AnnotationEpoch] != epoch || !hasGate(p) {
			delete(g.liftCalls, k)
		}
	}
	g.liftPrune = 2 * len(g.liftCalls)
}

// liftOnce removes the gang's scheduling gate from local pod ns/name of
// the committed epoch (its annotation value) and says whether it did
// (false: there was none). It blocks on one or a few workload cluster
// writes.
func (g *Gate) liftOnce(ctx context.Context, ns, name, epochValue string, epoch int64) (bool, error) {
	pods := g.local.CoreV1().Pods(ns)
	for attempt := range 5 {
		lp, err := g.localPod(ctx, ns, name, attempt == 0)
		if err != nil {
			return false, err
		}
		if lp.Annotations[v1alpha1.AnnotationEpoch] != epochValue {
			return false, fmt.Errorf("%w: local pod %s/%s is of epoch %s", ErrStaleEpoch, ns, name, lp.Annotations[v1alpha1.AnnotationEpoch])
		}
		patch, ok, err := liftPatch(lp)
		if err != nil || !ok {
			return false, err
		}
		_, err = pods.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) { // a test of the patch failed: read again
			continue
		}
		if err != nil {
			return false, err
		}
		klog.FromContext(ctx).V(2).Info("gang member committed", "pod", klog.KObj(lp), "epoch", epoch)
		return true, nil
	}
	return false, errors.New("kept changing")
}

// liftPatch is the JSON patch that removes the gang's gate from lp: it
// applies only while the pod's epoch and gates are as lp has them, and
// needs no resource version, so that the local scheduler's and the
// agent's own status writes between the read and the write do not make it
// conflict (an update did, for about half the members of a gang). ok is
// false when lp has no gate to lift.
func liftPatch(lp *corev1.Pod) (patch []byte, ok bool, err error) {
	gates := make([]corev1.PodSchedulingGate, 0, len(lp.Spec.SchedulingGates))
	for _, sg := range lp.Spec.SchedulingGates {
		if sg.Name != v1alpha1.SchedulingGate {
			gates = append(gates, sg)
		}
	}
	if len(gates) == len(lp.Spec.SchedulingGates) {
		return nil, false, nil
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	ops := []op{
		{Op: "test", Path: "/metadata/annotations/" + jsonPointerEscape(v1alpha1.AnnotationEpoch), Value: lp.Annotations[v1alpha1.AnnotationEpoch]},
		{Op: "test", Path: "/spec/schedulingGates", Value: lp.Spec.SchedulingGates},
	}
	if len(gates) == 0 {
		ops = append(ops, op{Op: "remove", Path: "/spec/schedulingGates"})
	} else {
		ops = append(ops, op{Op: "replace", Path: "/spec/schedulingGates", Value: gates})
	}
	patch, err = json.Marshal(ops)
	return patch, err == nil, err
}

// jsonPointerEscape escapes a map key for a JSON pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
