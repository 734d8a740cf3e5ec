// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// rendezvousCache holds the cached rendezvous Services and EndpointSlices
// of the member namespace (docs/rendezvous.md): the dispatcher writes one
// only when it differs from what it should be.
type rendezvousCache struct {
	services corelisters.ServiceNamespaceLister
	slices   discoverylisters.EndpointSliceNamespaceLister
	// byJob indexes the slices by their job label, so that a pass reads
	// each job's own and not every job's.
	byJob  cache.Indexer
	synced func() bool
}

// indexJob is the slice index by the job label.
const indexJob = "job"

func newRendezvousCache(f informers.SharedInformerFactory, namespace string) rendezvousCache {
	svc, sl := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
	si, ei := svc.Informer(), sl.Informer()
	// Cannot fail: the informer is not started yet and the index is new.
	_ = ei.AddIndexers(cache.Indexers{indexJob: func(o any) ([]string, error) {
		if m, err := meta.Accessor(o); err == nil && m.GetLabels()[v1alpha1.LabelJob] != "" {
			return []string{m.GetLabels()[v1alpha1.LabelJob]}, nil
		}
		return nil, nil
	}})
	return rendezvousCache{services: svc.Lister().Services(namespace), slices: sl.Lister().EndpointSlices(namespace),
		byJob: ei.GetIndexer(), synced: func() bool { return si.HasSynced() && ei.HasSynced() }}
}

// slicesOf returns the cached rendezvous slices of job.
func (rc rendezvousCache) slicesOf(job string) ([]*discoveryv1.EndpointSlice, error) {
	objs, err := rc.byJob.ByIndex(indexJob, job)
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// syncRendezvous keeps the job's headless Service and its EndpointSlices,
// which list every member of the current epoch, in whichever cluster, by
// the address its agent reported. The agents mirror both into every
// workload cluster that holds a member.
func (d *Dispatcher) syncRendezvous(ctx context.Context, s *scope) error {
	j, ns := s.job.Object, d.cfg.Namespace
	rc := d.pods.services
	if err := d.applyService(ctx, j, s.create); err != nil {
		return err
	}
	have, err := rc.slicesOf(j.Name)
	if err != nil {
		return err
	}
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, sl := range have {
		byName[sl.Name] = sl
	}
	var errs []error
	for _, want := range endpointSlices(j, ns, s.pods) {
		cur, ok := byName[want.Name]
		delete(byName, want.Name)
		if err := d.applySlice(ctx, cur, ok, want); err != nil {
			errs = append(errs, fmt.Errorf("rendezvous endpoint slice %s: %w", want.Name, err))
		}
	}
	for name := range byName { // the gang shrank below a slice, or changed address family
		errs = append(errs, d.deleteSlice(ctx, name))
	}
	if n := len(s.pods); n > 0 {
		klog.FromContext(ctx).V(4).Info("Rendezvous synced", "job", j.Name, "members", n)
	}
	return errors.Join(errs...)
}

// applyService creates the job's Service when the cache has none or the
// members are being created (create: the cache may still hold the previous
// epoch's, deleted with it), and drops the selector and updates the ports
// of one that has them wrong (a Service an older hub created with a
// selector).
func (d *Dispatcher) applyService(ctx context.Context, j *v1alpha1.Job, create bool) error {
	want := headlessService(j, d.cfg.Namespace)
	api := d.hub.CoreV1().Services(d.cfg.Namespace)
	cur, err := d.pods.services.services.Get(want.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if cur == nil || create {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		switch {
		case err == nil:
			return nil
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("create rendezvous service: %w", err)
		case cur == nil:
			return nil // not cached yet: compared next pass
		}
	}
	if len(cur.Spec.Selector) == 0 && cur.Spec.PublishNotReadyAddresses && samePorts(cur.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	next := cur.DeepCopy()
	next.Spec.Selector, next.Spec.PublishNotReadyAddresses, next.Spec.Ports = nil, true, want.Spec.Ports
	if _, err := api.Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !isNotFound(err) {
		return fmt.Errorf("update rendezvous service: %w", err)
	}
	return nil
}

// samePorts compares the ports the dispatcher sets (the API server fills in
// the target port).
func samePorts(cur, want []corev1.ServicePort) bool {
	if len(cur) != len(want) {
		return false
	}
	for i := range cur {
		if cur[i].Name != want[i].Name || cur[i].Port != want[i].Port || cur[i].Protocol != want[i].Protocol {
			return false
		}
	}
	return true
}

// applySlice makes the slice want.Name what want says: created when the
// cache has none (cached false), updated when cur differs.
func (d *Dispatcher) applySlice(ctx context.Context, cur *discoveryv1.EndpointSlice, cached bool, want *discoveryv1.EndpointSlice) error {
	api := d.hub.DiscoveryV1().EndpointSlices(want.Namespace)
	if !cached {
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		if cur, err = api.Get(ctx, want.Name, metav1.GetOptions{}); err != nil { // the cache had not seen it yet
			return err
		}
	}
	if sameSlice(cur, want) {
		return nil
	}
	if cur.AddressType != want.AddressType { // immutable: the members changed address family
		if err := api.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			return err
		}
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	next := cur.DeepCopy()
	next.Labels, next.Endpoints, next.Ports = want.Labels, want.Endpoints, want.Ports
	_, err := api.Update(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return nil // the next pass reads the newer one
	case isNotFound(err): // the cache still held the previous epoch's, deleted with it
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	return err
}

// sameSlice says whether the cached slice already is what want says.
func sameSlice(cur, want *discoveryv1.EndpointSlice) bool {
	return cur.AddressType == want.AddressType && equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) &&
		equality.Semantic.DeepEqual(cur.Ports, want.Ports) && equality.Semantic.DeepEqual(cur.Labels, want.Labels)
}

// deleteRendezvous removes the job's Service and EndpointSlices.
func (d *Dispatcher) deleteRendezvous(ctx context.Context, job string) error {
	var errs []error
	err := d.hub.CoreV1().Services(d.cfg.Namespace).Delete(ctx, v1alpha1.ServiceName(job), metav1.DeleteOptions{})
	if err != nil && !isNotFound(err) {
		errs = append(errs, err)
	}
	// The API server, not the cache: a slice created a moment ago must go too.
	l, err := d.hub.DiscoveryV1().EndpointSlices(d.cfg.Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, sl := range l.Items {
		errs = append(errs, d.deleteSlice(ctx, sl.Name))
	}
	return errors.Join(errs...)
}

func (d *Dispatcher) deleteSlice(ctx context.Context, name string) error {
	err := d.hub.DiscoveryV1().EndpointSlices(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete rendezvous endpoint slice %s: %w", name, err)
	}
	return nil
}

// sweepRendezvous removes the cached rendezvous Services and EndpointSlices
// of jobs that have neither a reservation nor a member pod (live names
// those that do): what a teardown's deletion left behind when it failed.
func (d *Dispatcher) sweepRendezvous(ctx context.Context, live map[string]bool) error {
	rc := d.pods.services
	orphans := map[string]bool{}
	svcs, err := rc.services.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range svcs {
		if job := s.Labels[v1alpha1.LabelJob]; !live[job] {
			orphans[job] = true
		}
	}
	slices, err := rc.slices.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range slices {
		if job := s.Labels[v1alpha1.LabelJob]; !live[job] {
			orphans[job] = true
		}
	}
	var errs []error
	for job := range orphans {
		errs = append(errs, d.deleteRendezvous(ctx, job))
	}
	return errors.Join(errs...)
}
