// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// ErrNotStarted is returned by Pass before Start.
var ErrNotStarted = errors.New("dispatch: the member pod cache is not started (call Start)")

// memberPods is the cache of the hub member pods: a shared informer on the
// pods of every namespace that carry the job label (each cluster's members
// live in its namespace, v1alpha1.ClusterNamespace). Passes read it
// instead of listing the API server each time. The same factory caches the
// jobs' rendezvous Services and EndpointSlices (rendezvous.go), which carry
// the job label too.
type memberPods struct {
	hub      kubernetes.Interface
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
	services rendezvousCache
	copies   *copyCache
	own      ownWrites
}

// newMemberPods caches the member pods and rendezvous objects of every
// namespace, and the jobs' dependencies of the users' namespace source with
// the hub's copies of them.
func newMemberPods(hub kubernetes.Interface, source string) *memberPods {
	f := informers.NewSharedInformerFactoryWithOptions(hub, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelJob }),
		informers.WithTransform(cachedForm))
	pods := f.Core().V1().Pods()
	inf := pods.Informer()
	// Before the start: a pass for one job reads only that job's members.
	_ = inf.AddIndexers(cache.Indexers{byJobIndex: jobIndex})
	return &memberPods{hub: hub, factory: f, informer: inf,
		lister: pods.Lister(), services: newRendezvousCache(f), copies: newCopyCache(hub, source)}
}

// cachedForm is what the informers keep of an object: without its managed
// fields, and a member pod's spec only in what the dispatcher reads of it
// (its node, host networking: memberAddress); its metadata and status
// whole. A member pod is made from its job's template (members.go), never
// from the cache, and changed only by merge patches of its metadata
// (act.go), so nothing writes the spec back: a reader of a cached pod's
// spec must be added here first. At a member pod of the scale harness
// 9.6 KB of the hub's heap, the member pods were its largest cache after
// the jobs (docs/scale.md).
func cachedForm(o any) (any, error) {
	if m, err := meta.Accessor(o); err == nil {
		m.SetManagedFields(nil)
	}
	if p, ok := o.(*corev1.Pod); ok {
		p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork}
	}
	return o, nil
}

// byJobIndex indexes the cached member pods by their job label.
const byJobIndex = "job"

// jobIndex is the byJobIndex function: a member pod's job.
func jobIndex(o any) ([]string, error) {
	p, ok := o.(*corev1.Pod)
	if !ok || !isMember(p) {
		return nil, nil
	}
	if job := p.Labels[v1alpha1.LabelJob]; job != "" {
		return []string{job}, nil
	}
	return nil, nil
}

// ofJob returns the cached member pods of job, sorted by name. The pods are
// the cache's: never modified.
func (m *memberPods) ofJob(job string) ([]*corev1.Pod, error) {
	objs, err := m.informer.GetIndexer().ByIndex(byJobIndex, job)
	if err != nil {
		return nil, fmt.Errorf("cached member pods of %s: %w", job, err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return m.own.over(job, out, m.informer.LastSyncResourceVersion()), nil
}

// jobOf is the job of a member pod informer event's object ("" when none).
func jobOf(o any) string {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok || !isMember(p) {
		return ""
	}
	return p.Labels[v1alpha1.LabelJob]
}

// start runs the informers until ctx ends.
func (m *memberPods) start(ctx context.Context) {
	m.factory.Start(ctx.Done())
	m.copies.start(ctx)
}

// wait blocks until the cache holds its first full list.
func (m *memberPods) wait(ctx context.Context) error {
	if m == nil {
		return ErrNotStarted
	}
	if !cache.WaitForCacheSync(ctx.Done(), m.informer.HasSynced, m.services.synced, m.copies.synced) {
		return fmt.Errorf("member pod cache not synced: %w", ctx.Err())
	}
	return nil
}

// byJob returns the cached member pods by job. The pods are the cache's:
// never modified.
func (m *memberPods) byJob() (map[string][]*corev1.Pod, error) {
	pods, err := m.lister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list cached member pods: %w", err)
	}
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if !isMember(p) {
			continue
		}
		if job, ok := p.Labels[v1alpha1.LabelJob]; ok {
			out[job] = append(out[job], p)
		}
	}
	return out, nil
}

// anyLive reports whether the API server still has a member pod of job (of
// epoch, when not 0): the check before a reservation is released, since the
// cache may not have seen a member created a moment ago. With
// ignoreFinished, members that ended do not count.
func (m *memberPods) anyLive(ctx context.Context, job string, epoch int64, ignoreFinished bool) (bool, error) {
	sel := v1alpha1.LabelJob + "=" + job
	if epoch != 0 {
		sel += "," + v1alpha1.LabelEpoch + "=" + strconv.FormatInt(epoch, 10)
	}
	opts := metav1.ListOptions{LabelSelector: sel}
	l, err := m.hub.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return false, fmt.Errorf("list member pods of %s: %w", job, err)
	}
	for i := range l.Items {
		if !isMember(&l.Items[i]) {
			continue
		}
		if !ignoreFinished {
			return true, nil
		}
		if ph := l.Items[i].Status.Phase; ph != corev1.PodSucceeded && ph != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}

// isMember says whether p is a member pod the dispatcher made: in the hub
// namespace of the cluster its label names. A pod labelled with a job
// anywhere else is not the dispatcher's, and never deleted by it.
func isMember(p *corev1.Pod) bool {
	c := p.Labels[v1alpha1.LabelCluster]
	return c != "" && p.Namespace == v1alpha1.ClusterNamespace(c)
}

// watchPods starts this leadership's member pod cache and queues the job
// of every member pod that changes until ctx ends.
func (d *Dispatcher) watchPods(ctx context.Context, add func(job string)) {
	d.Start(ctx)
	h := func(o any) { add(jobOf(o)) }
	reg, err := d.pods.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h,
		UpdateFunc: func(_, o any) { h(o) }, DeleteFunc: h})
	if err != nil {
		return // the informer already stopped: ctx ended
	}
	inf := d.pods.informer
	go func() {
		<-ctx.Done()
		_ = inf.RemoveEventHandler(reg)
	}()
}
