package gang

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// reasonTerminating: the member fits once terminating pods on its node are
// gone; it is not reported unprepared but retried (until the hub's prepare
// deadline), so a preemptor waits out its victims' grace period.
const reasonTerminating = "WaitingForTerminatingPods"

var errWaitTerminating = errors.New("waiting for terminating pods")

// workers is the number of members prepared concurrently.
const workers = 8

// indexNode indexes pods by spec.nodeName, indexTarget unbound members by target node.
const (
	indexNode   = "nodeName"
	indexTarget = "targetNode"
)

// Run prepares gated gang members of the local cluster until ctx ends. Fit
// checks read informer caches of nodes and pods; each prepare costs one
// status update.
func (g *Gate) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(g.local, 0)
	pods, nodes := f.Core().V1().Pods(), f.Core().V1().Nodes()
	nodeInformer := nodes.Informer() // registered before Start
	if err := pods.Informer().AddIndexers(cache.Indexers{indexNode: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}, indexTarget: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.Annotations[AnnotationTargetNode] != "" {
			return []string{p.Annotations[AnnotationTargetNode]}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer q.ShutDown()
	enqueue := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && needsPrepare(p) {
			q.Add(cache.MetaObjectToName(p))
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, nodeInformer.HasSynced) {
		return nil
	}
	g.mu.Lock()
	g.pods, g.nodes, g.podIndex = pods.Lister(), nodes.Lister(), pods.Informer().GetIndexer()
	g.mu.Unlock()
	go func() { <-ctx.Done(); q.ShutDown() }()
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
		klog.FromContext(ctx).Error(err, "prepare gang member", "pod", k)
		q.AddRateLimited(k)
		return true
	}
	q.Forget(k)
	return true
}

func (g *Gate) prepareKey(ctx context.Context, k cache.ObjectName) error {
	lp, err := g.pods.Pods(k.Namespace).Get(k.Name)
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
	unlock := g.lockNode(lp.Annotations[AnnotationTargetNode])
	defer unlock()
	return g.Prepare(ctx, lp)
}

// needsPrepare: a gated gang member without a Prepared condition yet.
func needsPrepare(p *corev1.Pod) bool {
	if _, _, ok := member(p); !ok || p.DeletionTimestamp != nil {
		return false
	}
	gated := false
	for _, sg := range p.Spec.SchedulingGates {
		gated = gated || sg.Name == SchedulingGate
	}
	return gated && preparedCondition(p) == nil
}

func preparedCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ConditionPrepared {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Prepare checks a gated member's fit and reports the Prepared condition.
func (g *Gate) Prepare(ctx context.Context, lp *corev1.Pod) error {
	job, epoch, _ := member(lp)
	cond := corev1.PodCondition{Type: ConditionPrepared, Status: corev1.ConditionTrue, Reason: "Fits",
		LastTransitionTime: metav1.Now()}
	if g.current(job) > epoch {
		cond.Status, cond.Reason = corev1.ConditionFalse, "StaleEpoch"
		cond.Message = fmt.Sprintf("epoch %d is older than %d", epoch, g.current(job))
	} else if reason, msg, err := g.fit(ctx, lp); err != nil {
		return err
	} else if reason == reasonTerminating {
		return fmt.Errorf("%w: %s", errWaitTerminating, msg) // retried: the GPUs free up soon
	} else if reason != "" {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, reason, msg
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

// fit returns a reason and message when the member does not fit its target node.
func (g *Gate) fit(ctx context.Context, lp *corev1.Pod) (string, string, error) {
	target := lp.Annotations[AnnotationTargetNode]
	if target == "" {
		return "", "", nil // a domain target: the local scheduler decides
	}
	n, err := g.node(ctx, target)
	if apierrors.IsNotFound(err) {
		return "NodeGone", fmt.Sprintf("node %s does not exist", target), nil
	}
	if err != nil {
		return "", "", err
	}
	if n.Spec.Unschedulable || !nodeReady(n) {
		return "NodeUnavailable", fmt.Sprintf("node %s is not ready or cordoned", target), nil
	}
	alloc := n.Status.Allocatable.Name(ResourceGPU, "0").Value()
	onNode, err := g.podsOn(ctx, target)
	if err != nil {
		return "", "", err
	}
	var used, terminating int64
	for _, p := range onNode {
		if p.Namespace == lp.Namespace && p.Name == lp.Name {
			continue
		}
		if p.Spec.NodeName == target && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			used += gpus(p)
			if p.DeletionTimestamp != nil {
				terminating += gpus(p)
			}
			continue
		}
		c := preparedCondition(p)
		if p.Spec.NodeName == "" && p.Annotations[AnnotationTargetNode] == target &&
			c != nil && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
			used += gpus(p) // prepared, not yet bound: holds its GPUs
		}
	}
	need := gpus(lp)
	if used+need > alloc && used-terminating+need <= alloc {
		return reasonTerminating, fmt.Sprintf("node %s frees %d GPUs held by terminating pods (preemption victims)",
			target, terminating), nil
	}
	if used+need > alloc {
		return "InsufficientGPUs", fmt.Sprintf("node %s has %d of %d GPUs free, the member needs %d",
			target, max(0, alloc-used), alloc, need), nil
	}
	return "", "", nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gpus is the pod's whole-GPU request (limits stand in for requests).
func gpus(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[ResourceGPU]; ok {
			n += q.Value()
		} else if q, ok := c.Resources.Limits[ResourceGPU]; ok {
			n += q.Value()
		}
	}
	return n
}
