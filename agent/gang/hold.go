// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Creator creates, once its epoch is committed, the local pod of a member
// held at its prepare (PrepareCreate said hold); the pod syncer
// (podsync.Syncer.CreateHeld) implements it. created is nil when the hub
// pod is no longer held (deleted meanwhile, or created already).
type Creator interface {
	CreateHeld(ctx context.Context, hubNamespace, hubName string) (created *corev1.Pod, err error)
}

// SetCreator sets what creates held members (call before Run; the pod
// syncer, built after the Gate, is the agent's). Without one no member is
// held: every member's local pod is created at its prepare, gated, and its
// gate lifted at the commit.
func (g *Gate) SetCreator(c Creator) { g.creator = c }

// heldMember is a member prepared and held: its local pod is created only
// at the commit of its epoch, and until then its GPUs are counted on its
// target node from here.
type heldMember struct {
	hub   types.NamespacedName
	job   string
	epoch int64
	// local is the local pod as it will be created (for the fit counts).
	local *corev1.Pod
}

// holds are the held members, by target node and local "<ns>/<name>" (fit
// counts) and by hub pod (commits).
type holds struct {
	byNode map[string]map[string]*heldMember
	byHub  map[types.NamespacedName]*heldMember
}

// hold records a member PrepareCreate prepared, unless its epoch's commit
// reached the agent already (then it is created at once, gated, and its
// gate lifted as a sibling's). Called with the member's node locked.
func (g *Gate) hold(hub, local *corev1.Pod, job string, epoch int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.committed[job] >= epoch || g.epochs[job] != epoch {
		return false
	}
	if g.holds.byNode == nil {
		g.holds.byNode, g.holds.byHub = map[string]map[string]*heldMember{}, map[types.NamespacedName]*heldMember{}
	}
	h := &heldMember{hub: types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name}, job: job, epoch: epoch,
		local: local.DeepCopy()}
	if old := g.holds.byHub[h.hub]; old != nil {
		g.dropHeld(old)
	}
	node := local.Annotations[v1alpha1.AnnotationTargetNode]
	if g.holds.byNode[node] == nil {
		g.holds.byNode[node] = map[string]*heldMember{}
	}
	g.holds.byNode[node][local.Namespace+"/"+local.Name] = h
	g.holds.byHub[h.hub] = h
	return true
}

// dropHeld forgets a held member; g.mu is held.
func (g *Gate) dropHeld(h *heldMember) {
	node := h.local.Annotations[v1alpha1.AnnotationTargetNode]
	delete(g.holds.byNode[node], h.local.Namespace+"/"+h.local.Name)
	if len(g.holds.byNode[node]) == 0 {
		delete(g.holds.byNode, node)
	}
	if g.holds.byHub[h.hub] == h {
		delete(g.holds.byHub, h.hub)
	}
}

// heldOn returns the local pods of the members held for node that the
// cache does not hold (seen: those it does). g.mu is held.
func (g *Gate) heldOn(node string, seen map[string]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for k, h := range g.holds.byNode[node] {
		if !seen[k] {
			out = append(out, h.local)
		}
	}
	return out
}

// heldOf returns the members of job's epoch held here. g.mu is held.
func (g *Gate) heldOf(job string, epoch int64) []types.NamespacedName {
	var out []types.NamespacedName
	for k, h := range g.holds.byHub {
		if h.job == job && h.epoch == epoch {
			out = append(out, k)
		}
	}
	return out
}

// Release forgets a held member whose hub pod is being deleted
// (podsync.Gate; its GPUs are free again here).
func (g *Gate) Release(hub *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h := g.holds.byHub[types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name}]; h != nil {
		g.dropHeld(h)
	}
}

// isHeld says whether the member of hub pod k is held.
func (g *Gate) isHeld(k types.NamespacedName) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holds.byHub[k] != nil
}

// createHeld has the creator create the local pod of held member k (of a
// committed epoch), ungated; a member of an epoch the job has left is
// forgotten instead. Once created the member counts on its node as a
// member just prepared (prepared) until the cache shows it.
func (g *Gate) createHeld(ctx context.Context, k types.NamespacedName) error {
	g.mu.Lock()
	h := g.holds.byHub[k]
	if h != nil && g.epochs[h.job] != h.epoch {
		g.dropHeld(h)
		h = nil
	}
	g.mu.Unlock()
	if h == nil {
		return nil
	}
	created, err := g.creator.CreateHeld(ctx, k.Namespace, k.Name)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropHeld(h)
	if created != nil {
		g.rememberPrepared(created)
		klog.FromContext(ctx).V(2).Info("gang member created at its commit", "pod", klog.KObj(created), "epoch", h.epoch)
	}
	return nil
}

// runCreates creates the held members the create queue holds,
// siblingLifts at once, until ctx ends.
func (g *Gate) runCreates(ctx context.Context) {
	runWorkers(siblingLifts, func() bool { return g.nextCreate(ctx) })
}

// nextCreate creates one queued held member; a failed create is retried
// with backoff.
func (g *Gate) nextCreate(ctx context.Context) bool {
	k, quit := g.creates.Get()
	if quit {
		return false
	}
	defer g.creates.Done(k)
	if err := g.createHeld(ctx, k); err != nil {
		klog.FromContext(ctx).V(2).Info("held member of a committed epoch not created yet; retrying", "pod", k, "err", err)
		g.creates.AddRateLimited(k)
		return true
	}
	g.creates.Forget(k)
	return true
}
