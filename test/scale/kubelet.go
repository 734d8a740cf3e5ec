// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// AnnotationRunFor is the member pod annotation (set on the job's pod
// template) that tells the simulated kubelet how long a member runs before
// it succeeds, as a Go duration. A member without it runs until deleted.
const AnnotationRunFor = "scale.shoal-dev.test/run-for"

// Kubelet is the simulated kube-scheduler and kubelets of one in-memory
// workload cluster, what a member needs once the agent lifted its gang's
// scheduling gate: the scheduler binds each ungated pod to the node its
// required node affinity pins it to (the agent pins every member to its
// target node), refusing a node without the GPUs free (a real scheduler
// would leave the pod Pending; the harness counts it as a GPU booked
// twice); the kubelet turns a bound pod Running at once and Succeeded
// after its AnnotationRunFor. A pod is bound and run only once; deleted
// pods free their GPUs.
type Kubelet struct {
	w      *Workload
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
	mu     sync.Mutex
	booked map[string]map[corev1.ResourceName]int64 // node -> resource -> booked
	holds  map[string]hold                          // pod UID -> what it holds
	// Overbooked lists the binds refused because the target node lacked
	// the GPUs: the hub and agent booked a GPU twice.
	overbooked []string
	finished   int
	ran        int
}

type hold struct {
	node string
	res  corev1.ResourceList
}

// NewKubelet returns the simulated scheduler and kubelet of w.
func NewKubelet(w *Workload) *Kubelet {
	return &Kubelet{w: w, booked: map[string]map[corev1.ResourceName]int64{}, holds: map[string]hold{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](
			50*time.Millisecond, 5*time.Second))}
}

// Run watches the cluster's pods and acts on them until ctx ends.
func (k *Kubelet) Run(ctx context.Context, workers int) error {
	f := informers.NewSharedInformerFactory(k.w.Fake, 0)
	inf := f.Core().V1().Pods().Informer()
	k.pods, k.nodes = f.Core().V1().Pods().Lister(), f.Core().V1().Nodes().Lister()
	enqueue := func(o any) {
		if key, err := cache.ObjectToName(o); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				k.release(p)
			}
		}}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, f.Core().V1().Nodes().Informer().HasSynced) {
		return ctx.Err()
	}
	go func() { <-ctx.Done(); k.queue.ShutDown() }()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				key, quit := k.queue.Get()
				if quit {
					return
				}
				retry, err := k.sync(ctx, key)
				switch {
				case err != nil && ctx.Err() == nil:
					klog.FromContext(ctx).V(2).Info("simulated kubelet", "pod", key, "err", err)
					k.queue.AddRateLimited(key)
				case retry > 0:
					k.queue.Forget(key)
					k.queue.AddAfter(key, retry)
				default:
					k.queue.Forget(key)
				}
				k.queue.Done(key)
			}
		})
	}
	wg.Wait()
	return nil
}

// sync moves one pod along: bind, run, succeed. It returns when to look
// again (a running pod's end).
func (k *Kubelet) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	p, err := k.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	switch {
	case p.DeletionTimestamp != nil:
		return 0, nil
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		k.release(p)
		return 0, nil
	case p.Spec.NodeName == "":
		if len(p.Spec.SchedulingGates) > 0 {
			return 0, nil // the agent lifts its gate at the commit
		}
		return 0, k.bind(ctx, p)
	case p.Status.Phase != corev1.PodRunning:
		return 0, k.start(ctx, p)
	}
	d, ok := runFor(p)
	if !ok {
		return 0, nil
	}
	if left := time.Until(p.Status.StartTime.Add(d)); left > 0 {
		return left, nil
	}
	return 0, k.finish(ctx, p)
}

// bind books the pod's GPUs on its pinned node and binds it there.
func (k *Kubelet) bind(ctx context.Context, p *corev1.Pod) error {
	node := pinnedNode(p)
	if node == "" {
		return fmt.Errorf("pod %s/%s is pinned to no node", p.Namespace, p.Name)
	}
	n, err := k.nodes.Get(node)
	if err != nil {
		return fmt.Errorf("pod %s/%s: node %s: %w", p.Namespace, p.Name, node, err)
	}
	want := gpuRequests(p)
	k.mu.Lock()
	if _, held := k.holds[string(p.UID)]; !held {
		for r, q := range want {
			free := n.Status.Allocatable.Name(r, "").Value() - k.booked[node][r]
			if q > free {
				k.overbooked = append(k.overbooked, fmt.Sprintf("%s/%s asks %d %s on %s, %d free", p.Namespace, p.Name, q, r, node, free))
				k.mu.Unlock()
				return fmt.Errorf("node %s has %d %s free, pod %s/%s asks %d", node, free, r, p.Namespace, p.Name, q)
			}
		}
		if k.booked[node] == nil {
			k.booked[node] = map[corev1.ResourceName]int64{}
		}
		res := corev1.ResourceList{}
		for r, q := range want {
			k.booked[node][r] += q
			res[r] = *resourceQuantity(q)
		}
		k.holds[string(p.UID)] = hold{node: node, res: res}
	}
	k.mu.Unlock()
	p = p.DeepCopy()
	p.Spec.NodeName = node
	now := metav1.Now()
	p.Status.Conditions = setCondition(p.Status.Conditions, corev1.PodScheduled, now)
	_, err = k.w.Fake.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
	return err
}

// start reports a bound pod Running.
func (k *Kubelet) start(ctx context.Context, p *corev1.Pod) error {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &now
	p.Status.HostIP, p.Status.PodIP = "10.0.0.1", "10.1.0.1"
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = setCondition(p.Status.Conditions, t, now)
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	if _, err := k.w.Fake.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	k.mu.Lock()
	k.ran++
	k.mu.Unlock()
	return nil
}

// finish reports a running pod Succeeded (every container exited 0).
func (k *Kubelet) finish(ctx context.Context, p *corev1.Pod) error {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodSucceeded
	for i := range p.Status.Conditions {
		if t := p.Status.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionFalse, "PodCompleted"
		}
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptr(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
			StartedAt: started, FinishedAt: now}}
	}
	if _, err := k.w.Fake.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	k.release(p)
	k.mu.Lock()
	k.finished++
	k.mu.Unlock()
	return nil
}

// release frees what the pod held.
func (k *Kubelet) release(p *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h, ok := k.holds[string(p.UID)]
	if !ok {
		return
	}
	delete(k.holds, string(p.UID))
	for r, q := range h.res {
		k.booked[h.node][r] -= q.Value()
	}
}

// KubeletStats is what a Kubelet did.
type KubeletStats struct {
	// Ran and Finished count the members started and succeeded.
	Ran, Finished int
	// Overbooked lists the binds refused for want of free GPUs.
	Overbooked []string
}

// Stats returns what the kubelet did so far.
func (k *Kubelet) Stats() KubeletStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return KubeletStats{Ran: k.ran, Finished: k.finished, Overbooked: append([]string(nil), k.overbooked...)}
}

// pinnedNode is the node the agent pinned the pod to: its target-node
// annotation, else a metadata.name In [node] of its required affinity.
func pinnedNode(p *corev1.Pod) string {
	if n := p.Annotations[v1alpha1.AnnotationTargetNode]; n != "" {
		return n
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// gpuRequests sums the pod's GPU and MIG requests over its containers (a
// container's limit where it sets no request, as for extended resources).
func gpuRequests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		seen := map[corev1.ResourceName]bool{}
		for r, q := range c.Resources.Requests {
			if strings.HasPrefix(string(r), "nvidia.com/") {
				out[r] += q.Value()
				seen[r] = true
			}
		}
		for r, q := range c.Resources.Limits {
			if strings.HasPrefix(string(r), "nvidia.com/") && !seen[r] {
				out[r] += q.Value()
			}
		}
	}
	return out
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// runFor is the pod's AnnotationRunFor.
func runFor(p *corev1.Pod) (time.Duration, bool) {
	d, err := time.ParseDuration(p.Annotations[AnnotationRunFor])
	return d, err == nil && p.Status.StartTime != nil
}

func setCondition(cs []corev1.PodCondition, t corev1.PodConditionType, now metav1.Time) []corev1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			cs[i].Status, cs[i].LastTransitionTime = corev1.ConditionTrue, now
			return cs
		}
	}
	return append(cs, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

func ptr[T any](v T) *T { return &v }
