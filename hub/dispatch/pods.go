// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
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
// pods of the member namespace that carry the job label. Passes read it
// instead of listing the API server each time. The same factory caches the
// jobs' rendezvous Services and EndpointSlices (rendezvous.go), which carry
// the job label too.
type memberPods struct {
	hub       kubernetes.Interface
	namespace string
	factory   informers.SharedInformerFactory
	informer  cache.SharedIndexInformer
	lister    corelisters.PodNamespaceLister
	services  rendezvousCache
}

func newMemberPods(hub kubernetes.Interface, namespace string) *memberPods {
	f := informers.NewSharedInformerFactoryWithOptions(hub, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelJob }))
	pods := f.Core().V1().Pods()
	return &memberPods{hub: hub, namespace: namespace, factory: f, informer: pods.Informer(),
		lister: pods.Lister().Pods(namespace), services: newRendezvousCache(f, namespace)}
}

// start runs the informer until ctx ends.
func (m *memberPods) start(ctx context.Context) { m.factory.Start(ctx.Done()) }

// wait blocks until the cache holds its first full list.
func (m *memberPods) wait(ctx context.Context) error {
	if m == nil {
		return ErrNotStarted
	}
	if !cache.WaitForCacheSync(ctx.Done(), m.informer.HasSynced, m.services.synced) {
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
	opts := metav1.ListOptions{LabelSelector: sel, Limit: 1}
	if ignoreFinished {
		opts.Limit = 0
	}
	l, err := m.hub.CoreV1().Pods(m.namespace).List(ctx, opts)
	if err != nil {
		return false, fmt.Errorf("list member pods of %s: %w", job, err)
	}
	if !ignoreFinished {
		return len(l.Items) > 0, nil
	}
	for i := range l.Items {
		if ph := l.Items[i].Status.Phase; ph != corev1.PodSucceeded && ph != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}

// watchPods starts this leadership's member pod cache and pokes on every
// change of a member pod until ctx ends.
func (d *Dispatcher) watchPods(ctx context.Context, poke func()) {
	d.Start(ctx)
	h := func(any) { poke() }
	reg, err := d.pods.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h,
		UpdateFunc: func(_, _ any) { poke() }, DeleteFunc: h})
	if err != nil {
		return // the informer already stopped: ctx ended
	}
	inf := d.pods.informer
	go func() {
		<-ctx.Done()
		_ = inf.RemoveEventHandler(reg)
	}()
}
