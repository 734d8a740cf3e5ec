// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// errWaitTerminating: the member is retried, not reported (see
// reasonTerminating).
var errWaitTerminating = errors.New("waiting for terminating pods")

// workers is the number of members prepared concurrently.
const workers = 8

// Run loads the epochs (Load), then prepares gated gang members of the
// local cluster and removes stale ones until ctx ends. Fit checks read the
// shared cache of nodes and pods; each prepare here costs one status
// update (most members are created prepared instead: PrepareCreate).
func (g *Gate) Run(ctx context.Context) error {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer q.ShutDown()
	defer g.stale.ShutDown()
	defer g.lifts.ShutDown()
	defer g.creates.ShutDown()
	enqueue := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		g.shown(p, false)
		if needsPrepare(p) {
			q.Add(cache.MetaObjectToName(p))
		}
		if g.liftDue(p) { // gated after its epoch's commit reached the agent
			g.lifts.Add(cache.MetaObjectToName(p))
		}
		if job, epoch, ok := member(p); ok && g.isLoaded() && epoch < g.current(job) {
			g.stale.Add(job)
		}
	}
	gone := func(o any) {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if p, ok := o.(*corev1.Pod); ok {
			g.shown(p, true)
		}
	}
	reg, err := g.cache.AddPodHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: gone})
	if err != nil {
		return err
	}
	if !g.cache.WaitForCacheSync(ctx, reg) {
		return nil
	}
	if !g.loadRetrying(ctx) {
		return nil
	}
	go func() { <-ctx.Done(); q.ShutDown(); g.stale.ShutDown(); g.lifts.ShutDown(); g.creates.ShutDown() }()
	var stale sync.WaitGroup
	stale.Add(3)
	go func() { defer stale.Done(); g.runStale(ctx) }()
	go func() { defer stale.Done(); g.runLifts(ctx) }()
	go func() { defer stale.Done(); g.runCreates(ctx) }()
	if g.domains != nil {
		stale.Add(1)
		go func() { defer stale.Done(); g.runDomains(ctx, time.Second) }()
	}
	defer stale.Wait()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g.next(ctx, q) {
			}
		}()
	}
	wg.Wait()
	return nil
}

func (g *Gate) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName]) bool {
	k, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(k)
	if err := g.prepareKey(ctx, k); err != nil {
		if errors.Is(err, errWaitComputeDomain) {
			klog.FromContext(ctx).V(2).Info("Gang member waits for its ComputeDomain", "pod", k, "err", err)
		} else {
			klog.FromContext(ctx).Error(err, "prepare gang member", "pod", k)
		}
		q.AddRateLimited(k)
		return true
	}
	q.Forget(k)
	return true
}

func (g *Gate) prepareKey(ctx context.Context, k cache.ObjectName) error {
	lp, err := g.cache.Pods().Pods(k.Namespace).Get(k.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !needsPrepare(lp) {
		return nil
	}
	// One member per target node at a time, so that two members never both
	// count the same free GPUs.
	unlock := g.lockNode(lp.Annotations[v1alpha1.AnnotationTargetNode])
	defer unlock()
	return g.Prepare(ctx, lp)
}

// needsPrepare: a gated gang member without a Prepared condition yet
// (neither in its status nor created prepared).
func needsPrepare(p *corev1.Pod) bool {
	if _, _, ok := member(p); !ok || p.DeletionTimestamp != nil {
		return false
	}
	return hasGate(p) && v1alpha1.PreparedCondition(p) == nil
}

// PrepareCreate prepares a gang member before the pod syncer creates its
// local pod (podsync.Gate; after Mutate). When the gated member fits its
// target node now, it records the epoch (before the hub can commit it, as
// Prepare does) and marks local v1alpha1.AnnotationPrepared, which stands
// for the Prepared condition: the member is reported Prepared with its
// first status, and its prepare costs no write of the pod and no pass
// through Run's queue (at a 256-member gang start, 256 status writes to
// the workload clusters). With a Creator (SetCreator) such a member is
// held (hold true): its pod is not created now but at its epoch's commit,
// ungated (hold.go), and its GPUs count on its node from here; at a gang
// start that saves the gate's lift, one more write per member in the
// workload cluster, and keeps the members' creates off the clusters before
// the commit. Members of a native-gang slice (their PodGroup gates them
// together) and members whose epoch's commit reached the agent already
// are not held. Otherwise the target node stays locked until done is
// called, so that the next member on the node counts this one. Anything
// else (a member of a compute domain, one that does not fit yet, a failed
// read or record write) leaves the pod unmarked, and Run prepares it after
// the create as before.
func (g *Gate) PrepareCreate(ctx context.Context, hub, local *corev1.Pod) (done func(created *corev1.Pod), hold bool) {
	nothing := func(*corev1.Pod) {}
	job, epoch, ok := member(local)
	if !ok || !hasGate(local) || v1alpha1.PreparedCondition(local) != nil || !g.isLoaded() {
		return nothing, false
	}
	if _, domain := hub.Annotations[v1alpha1.AnnotationComputeDomain]; domain {
		return nothing, false // prepareDomain makes the domain, owned by the created pods
	}
	if g.current(job) != epoch {
		return nothing, false
	}
	if g.record != nil {
		if err := g.record.save(ctx, g.local, job, epoch, g.clock.Now()); err != nil {
			klog.FromContext(ctx).V(2).Info("Gang member prepared after its create", "pod", klog.KObj(local), "err", err)
			return nothing, false
		}
	}
	unlock := func() {}
	if target := local.Annotations[v1alpha1.AnnotationTargetNode]; target != "" {
		unlock = g.lockNode(target) // a member with no target holds no GPUs of a node
	}
	if reason, _, err := g.fit(local); err != nil || reason != "" || g.current(job) != epoch {
		unlock()
		return nothing, false
	}
	local.Annotations[v1alpha1.AnnotationPrepared] = string(corev1.ConditionTrue)
	if _, _, slice := g.sliceGroup(hub, epoch); !slice && g.creator != nil && g.hold(hub, local, job, epoch) {
		unlock() // counted on the node as held from here
		return nothing, true
	}
	return func(created *corev1.Pod) {
		defer unlock()
		if created != nil && v1alpha1.PreparedCondition(created) != nil {
			g.prepared(created)
		}
	}, false
}

// Prepare checks a gated member's fit and reports the Prepared condition.
func (g *Gate) Prepare(ctx context.Context, lp *corev1.Pod) error {
	job, epoch, _ := member(lp)
	cond := corev1.PodCondition{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonFits,
		LastTransitionTime: metav1.Now()}
	if g.current(job) > epoch {
		cond.Status, cond.Reason = corev1.ConditionFalse, v1alpha1.ReasonStaleEpoch
		cond.Message = fmt.Sprintf("epoch %d is older than %d", epoch, g.current(job))
	} else if reason, msg, err := g.prepareDomain(ctx, lp); err != nil {
		return err // retried: the domain's controller makes its channel template soon
	} else if reason != "" {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, reason, msg
	} else if reason, msg, err := g.fit(lp); err != nil {
		return err
	} else if reason == reasonTerminating {
		return fmt.Errorf("%w: %s", errWaitTerminating, msg) // retried: the GPUs free up soon
	} else if reason != "" {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, reason, msg
	}
	if g.record != nil { // durable before the hub can commit the epoch
		if err := g.record.save(ctx, g.local, job, g.current(job), g.clock.Now()); err != nil {
			return err
		}
	}
	lp = lp.DeepCopy()
	lp.Status.Conditions = append(lp.Status.Conditions, cond)
	updated, err := g.local.CoreV1().Pods(lp.Namespace).UpdateStatus(ctx, lp, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	g.prepared(updated)
	klog.FromContext(ctx).V(2).Info("gang member prepared", "pod", klog.KObj(lp), "fits", cond.Status, "reason", cond.Reason)
	return nil
}
