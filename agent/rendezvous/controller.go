// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/kubeindex"
)

// workers is how many jobs are mirrored at once.
const workers = 4

// key names one job's rendezvous. Job names are unique on the hub; the hub
// namespace is the cluster's (Mirror.hubNS), the workload cluster's is read
// from the job's local members (their queue's).
type key struct{ job string }

// lists are one cluster's cached rendezvous Services (by name and by
// job) and slices (by job).
type lists struct {
	factory  informers.SharedInformerFactory
	services corelisters.ServiceLister
	// svcIndex and sliceIndex index the Services and slices by job.
	svcIndex, sliceIndex cache.Indexer
	synced               []cache.InformerSynced
}

// indexJob indexes objects by their job label (v1alpha1.LabelJob).
const indexJob = "job"

var jobIndexers = cache.Indexers{indexJob: kubeindex.Label(v1alpha1.LabelJob)}

// newLists caches what selector selects in namespace (every namespace
// when empty).
func newLists(c kubernetes.Interface, namespace, selector string) *lists {
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	svc, sl := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
	// Cannot fail: the informers are not started yet and the index is new.
	_ = svc.Informer().AddIndexers(jobIndexers)
	_ = sl.Informer().AddIndexers(jobIndexers)
	return &lists{factory: f, services: svc.Lister(),
		svcIndex: svc.Informer().GetIndexer(), sliceIndex: sl.Informer().GetIndexer(),
		synced: []cache.InformerSynced{svc.Informer().HasSynced, sl.Informer().HasSynced}}
}

// servicesOf returns the cached Services of job.
func (l *lists) servicesOf(job string) ([]*corev1.Service, error) {
	return kubeindex.Of[*corev1.Service](l.svcIndex, indexJob, job)
}

// slicesOf returns the cached EndpointSlices of job.
func (l *lists) slicesOf(job string) ([]*discoveryv1.EndpointSlice, error) {
	return kubeindex.Of[*discoveryv1.EndpointSlice](l.sliceIndex, indexJob, job)
}

// Mirror keeps the workload cluster's copies of the hub's rendezvous
// Services and EndpointSlices (see the package doc). Create it with New and
// Run it once.
type Mirror struct {
	hub, local *lists
	// hubNS is the cluster's namespace on the hub: the only one read.
	hubNS    string
	client   kubernetes.Interface
	workload *cluster.Cache
	queue    workqueue.TypedRateLimitingInterface[key]
}

// New returns the Mirror for namespace hubNamespace (the cluster's,
// v1alpha1.ClusterNamespace) of the hub cluster behind hub and the workload
// cluster of workload.
func New(hub kubernetes.Interface, hubNamespace string, workload *cluster.Cache) *Mirror {
	managed := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManaged: "true"}).String()
	return &Mirror{
		hub:      newLists(hub, hubNamespace, v1alpha1.LabelJob),
		hubNS:    hubNamespace,
		local:    newLists(workload.Client(), metav1.NamespaceAll, v1alpha1.LabelJob+","+managed),
		client:   workload.Client(),
		workload: workload,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[key](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "rendezvous"}),
	}
}

// Run watches both clusters and mirrors every job's rendezvous until ctx
// ends.
func (m *Mirror) Run(ctx context.Context) error {
	defer m.queue.ShutDown()
	h := cache.ResourceEventHandlerFuncs{AddFunc: m.enqueue, UpdateFunc: func(_, o any) { m.enqueue(o) }, DeleteFunc: m.enqueue}
	var regs []cache.ResourceEventHandlerRegistration
	for _, l := range []*lists{m.hub, m.local} {
		for _, inf := range []cache.SharedIndexInformer{l.factory.Core().V1().Services().Informer(),
			l.factory.Discovery().V1().EndpointSlices().Informer()} {
			r, err := inf.AddEventHandler(h)
			if err != nil {
				return err
			}
			regs = append(regs, r)
		}
	}
	// Members come and go; a member's pod changing does not change the mirror.
	r, err := m.workload.AddPodHandler(cache.ResourceEventHandlerFuncs{AddFunc: m.enqueue, DeleteFunc: m.enqueue})
	if err != nil {
		return err
	}
	regs = append(regs, r)
	m.hub.factory.Start(ctx.Done())
	m.local.factory.Start(ctx.Done())
	defer m.hub.factory.Shutdown()
	defer m.local.factory.Shutdown()
	syncs := append(append([]cache.InformerSynced{}, m.hub.synced...), m.local.synced...)
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) || !m.workload.WaitForCacheSync(ctx, regs...) {
		return nil // ctx ended
	}
	klog.FromContext(ctx).Info("Mirroring rendezvous Services")
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for m.next(ctx) { //nolint:revive // next does the work
			}
		}()
	}
	<-ctx.Done()
	m.queue.ShutDown()
	for range workers {
		<-done
	}
	return nil
}

// enqueue queues the job of a Service, slice or pod carrying the job label.
func (m *Mirror) enqueue(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if job := o.GetLabels()[v1alpha1.LabelJob]; job != "" {
		m.queue.Add(key{job: job})
	}
}

// next syncs one queued job; false once the queue is shut down.
func (m *Mirror) next(ctx context.Context) bool {
	k, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(k)
	if err := m.sync(ctx, k); err != nil {
		klog.FromContext(ctx).Error(err, "Mirroring the rendezvous failed; retrying", "job", k.job)
		m.queue.AddRateLimited(k)
		return true
	}
	m.queue.Forget(k)
	return true
}

// sync makes the workload cluster's mirror of one job what the hub says,
// or removes it when the job has no local member or no hub Service. The
// mirror lives in the namespace of the job's local members (their queue's,
// where <job>-<index>.<job>.<namespace> must resolve); the hub's objects are
// read from the cluster's hub namespace, the only one the agent may read.
func (m *Mirror) sync(ctx context.Context, k key) error {
	members, err := m.managedMembers(k.job)
	if err != nil {
		return err
	}
	localSlices, err := m.local.slicesOf(k.job)
	if err != nil {
		return err
	}
	if len(members) == 0 {
		return m.remove(ctx, k, "", localSlices)
	}
	ns := members[0].Namespace
	hubSvc, err := m.hub.services.Services(m.hubNS).Get(v1alpha1.ServiceName(k.job))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if hubSvc == nil {
		return m.remove(ctx, k, "", localSlices)
	}
	if err := m.applyService(ctx, MirrorService(hubSvc, ns)); err != nil {
		return err
	}
	hubSlices, err := m.hub.slicesOf(k.job) // the hub lists are of hubNS alone
	if err != nil {
		return err
	}
	have := map[string]*discoveryv1.EndpointSlice{}
	var errs []error
	for _, s := range localSlices {
		if s.Namespace == ns {
			have[s.Name] = s
		}
	}
	for _, hs := range hubSlices {
		if hs.Labels[discoveryv1.LabelManagedBy] != v1alpha1.SliceManagedByHub {
			continue
		}
		errs = append(errs, m.applySlice(ctx, have[hs.Name], MirrorSlice(hs, ns)))
		delete(have, hs.Name)
	}
	for _, s := range have {
		errs = append(errs, m.deleteSlice(ctx, s.Namespace, s.Name))
	}
	errs = append(errs, m.remove(ctx, k, ns, localSlices)) // copies left in another namespace
	if err := errors.Join(errs...); err != nil {
		return err
	}
	klog.FromContext(ctx).V(4).Info("Rendezvous mirrored", "namespace", ns, "job", k.job,
		"slices", len(hubSlices), "localMembers", len(members))
	return nil
}

// managedMembers returns the job's managed local members (the ones the
// agent created for its hub pods), in whatever namespace.
func (m *Mirror) managedMembers(job string) ([]*corev1.Pod, error) {
	pods, err := m.workload.PodsOfJob("", job)
	if err != nil {
		return nil, err
	}
	out := pods[:0]
	for _, p := range pods {
		if p.Labels[v1alpha1.LabelManaged] == "true" {
			out = append(out, p)
		}
	}
	return out, nil
}

// applyService creates the local Service or updates it where it drifted.
func (m *Mirror) applyService(ctx context.Context, want *corev1.Service) error {
	api := m.client.CoreV1().Services(want.Namespace)
	cur, err := m.local.services.Services(want.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return wrap("create service", want.Namespace, want.Name, err)
		}
		if cur, err = api.Get(ctx, want.Name, metav1.GetOptions{}); err != nil { // not cached yet
			return wrap("read service", want.Namespace, want.Name, err)
		}
	} else if err != nil {
		return err
	}
	if !serviceDrifted(cur, want) {
		return nil
	}
	if cur.Labels[v1alpha1.LabelManaged] != "true" {
		return fmt.Errorf("service %s/%s exists and is not Shoal's: the job's rendezvous name is taken", want.Namespace, want.Name)
	}
	next := cur.DeepCopy()
	next.Labels, next.Spec.Selector = want.Labels, nil
	next.Spec.Ports, next.Spec.PublishNotReadyAddresses = want.Spec.Ports, want.Spec.PublishNotReadyAddresses
	_, err = api.Update(ctx, next, metav1.UpdateOptions{})
	return wrap("update service", want.Namespace, want.Name, err)
}

// applySlice creates the local slice (cur nil: not cached) or updates it
// where it drifted; a changed address type (immutable) replaces it.
func (m *Mirror) applySlice(ctx context.Context, cur, want *discoveryv1.EndpointSlice) error {
	api := m.client.DiscoveryV1().EndpointSlices(want.Namespace)
	if cur == nil {
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return wrap("create endpoint slice", want.Namespace, want.Name, err)
		}
		if cur, err = api.Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
			return wrap("read endpoint slice", want.Namespace, want.Name, err)
		}
	}
	if !sliceDrifted(cur, want) {
		return nil
	}
	if cur.AddressType != want.AddressType {
		if err := m.deleteSlice(ctx, want.Namespace, want.Name); err != nil {
			return err
		}
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		return wrap("create endpoint slice", want.Namespace, want.Name, err)
	}
	next := cur.DeepCopy()
	next.Labels, next.Endpoints, next.Ports = want.Labels, want.Endpoints, want.Ports
	_, err := api.Update(ctx, next, metav1.UpdateOptions{})
	return wrap("update endpoint slice", want.Namespace, want.Name, err)
}

// remove deletes the job's local Services and slices in every namespace
// but keep ("" for none).
func (m *Mirror) remove(ctx context.Context, k key, keep string, slices []*discoveryv1.EndpointSlice) error {
	var errs []error
	for _, s := range slices {
		if s.Namespace != keep {
			errs = append(errs, m.deleteSlice(ctx, s.Namespace, s.Name))
		}
	}
	svcs, err := m.local.servicesOf(k.job)
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		if svc.Namespace == keep || svc.Name != v1alpha1.ServiceName(k.job) {
			continue
		}
		err := m.client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			errs = append(errs, wrap("delete service", svc.Namespace, svc.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Mirror) deleteSlice(ctx context.Context, ns, name string) error {
	err := m.client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap("delete endpoint slice", ns, name, err)
}

// wrap names the object a failed write was about (nil stays nil).
func wrap(what, ns, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s/%s: %w", what, ns, name, err)
}
