// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/internal/kubeindex"
)

// rendezvousCache holds the cached rendezvous Services and EndpointSlices
// of every cluster namespace (docs/rendezvous.md): the dispatcher writes
// one only when it differs from what it should be.
type rendezvousCache struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	// byJob and servicesByJob index the slices and Services by their job
	// label, so that a pass reads each job's own and not every job's (at
	// thousands of gangs, listing every Service on each pass was a tenth
	// of the hub's CPU).
	byJob, servicesByJob cache.Indexer
	synced               func() bool
}

// indexJob is the slice index by the job label.
const indexJob = "job"

func newRendezvousCache(f informers.SharedInformerFactory) rendezvousCache {
	svc, sl := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
	si, ei := svc.Informer(), sl.Informer()
	byJobLabel := kubeindex.Label(v1alpha1.LabelJob)
	// Cannot fail: the informers are not started yet and the index is new.
	_ = ei.AddIndexers(cache.Indexers{indexJob: byJobLabel})
	_ = si.AddIndexers(cache.Indexers{indexJob: byJobLabel})
	return rendezvousCache{services: svc.Lister(), slices: sl.Lister(),
		byJob: ei.GetIndexer(), servicesByJob: si.GetIndexer(), synced: func() bool { return si.HasSynced() && ei.HasSynced() }}
}

// slicesOf returns the cached rendezvous slices of job.
func (rc rendezvousCache) slicesOf(job string) ([]*discoveryv1.EndpointSlice, error) {
	return kubeindex.Of[*discoveryv1.EndpointSlice](rc.byJob, indexJob, job)
}

// servicesOf returns the cached rendezvous Services of job.
func (rc rendezvousCache) servicesOf(job string) ([]*corev1.Service, error) {
	return kubeindex.Of[*corev1.Service](rc.servicesByJob, indexJob, job)
}

// syncRendezvous keeps the job's headless Service and its EndpointSlices,
// which list every member of the current epoch, in whichever cluster, by
// the address its agent reported, in the namespace of every cluster that
// holds a member (a gang split over two clusters has the same slices in
// both). Each agent mirrors its namespace's into its workload cluster. A
// namespace of a cluster that no longer holds a member loses them.
func (d *Dispatcher) syncRendezvous(ctx context.Context, s *scope) error {
	j := s.job.Object
	rc := d.pods.services
	namespaces := clusterNamespaces(s.res)
	if err := d.ensureNamespaces(ctx, namespaces); err != nil {
		return err
	}
	have, err := rc.slicesOf(j.Name)
	if err != nil {
		return err
	}
	byName := map[types.NamespacedName]*discoveryv1.EndpointSlice{}
	for _, sl := range have {
		if v1alpha1.IsClusterNamespace(sl.Namespace) {
			byName[types.NamespacedName{Namespace: sl.Namespace, Name: sl.Name}] = sl
		}
	}
	wants := make(map[string][]*discoveryv1.EndpointSlice, len(namespaces))
	for _, ns := range namespaces {
		wants[ns] = endpointSlices(j, ns, s.pods)
	}
	later := d.deferSlices(s, byName, wants)
	var errs []error
	wrote := false
	for _, ns := range namespaces {
		if err := d.applyService(ctx, j, ns, s.create && missingMembers(s)); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, want := range wants[ns] {
			k := types.NamespacedName{Namespace: ns, Name: want.Name}
			cur, ok := byName[k]
			delete(byName, k)
			if later || ok && sameSlice(cur, want) {
				continue
			}
			wrote = true
			if err := d.applySlice(ctx, cur, ok, want); err != nil {
				errs = append(errs, fmt.Errorf("rendezvous endpoint slice %s: %w", k, err))
			}
		}
	}
	for k := range byName { // the gang shrank below a slice, changed address family or left a cluster
		errs = append(errs, d.deleteSlice(ctx, k.Namespace, k.Name))
	}
	if wrote && d.coalescing() {
		d.sliceWrites.Store(j.Name, s.now)
	}
	errs = append(errs, d.dropServices(ctx, j.Name, namespaces))
	if n := len(s.pods); n > 0 {
		klog.FromContext(ctx).V(4).Info("Rendezvous synced", "members", n, "namespaces", len(namespaces))
	}
	return errors.Join(errs...)
}

// rendezvousEvery is how often, at most, Lead writes a job's rendezvous
// EndpointSlices while its members only gain addresses (a gang starting,
// its members' addresses arriving one after another): every write is the
// whole slice, up to 1,000 endpoints, in the hub cluster and again in each
// member cluster by its agent's mirror (a 256-member gang over two
// clusters wrote its two hub slices 72 times). A change that drops or
// moves an address (it may be another pod's next), that lists member 0
// (MASTER_ADDR) or that lists the last member is written at once.
const rendezvousEvery = 500 * time.Millisecond

// deferSlices says whether the slices the pass would write (wants, by
// namespace, against the cached have) wait: Lead runs, the job's slices
// were written less than rendezvousEvery ago, and every change only adds
// members other than member 0 without listing the last one. It then sets
// the pass's wake for the reconcile that writes them.
func (d *Dispatcher) deferSlices(s *scope, have map[types.NamespacedName]*discoveryv1.EndpointSlice,
	wants map[string][]*discoveryv1.EndpointSlice) bool {
	next, ok := d.writtenWithin(&d.sliceWrites, s, rendezvousEvery)
	if !ok {
		return false
	}
	master := v1alpha1.MemberHostname(s.name, 0)
	gains, wanted := false, 0
	for ns, ws := range wants {
		listed := 0
		for _, w := range ws {
			cur, ok := have[types.NamespacedName{Namespace: ns, Name: w.Name}]
			if !ok {
				return false // a new slice
			}
			more, ok := onlyGains(cur, w, master)
			if !ok {
				return false
			}
			gains = gains || more
			listed += len(w.Endpoints)
		}
		wanted += len(ws)
		if listed >= len(s.res.Members) {
			return false // the last member
		}
	}
	if !gains || wanted != countIn(have, wants) {
		return false // nothing to write, or a slice to delete
	}
	s.wakeAt(next)
	return true
}

// countIn counts the slices of have in the namespaces of wants.
func countIn(have map[types.NamespacedName]*discoveryv1.EndpointSlice, wants map[string][]*discoveryv1.EndpointSlice) int {
	n := 0
	for k := range have {
		if _, ok := wants[k.Namespace]; ok {
			n++
		}
	}
	return n
}

// onlyGains says whether want is cur with endpoints added (more) and
// nothing else changed, none of the added ones named master (ok).
func onlyGains(cur, want *discoveryv1.EndpointSlice, master string) (more, ok bool) {
	if cur.AddressType != want.AddressType || !equality.Semantic.DeepEqual(cur.Ports, want.Ports) ||
		!equality.Semantic.DeepEqual(cur.Labels, want.Labels) || len(want.Endpoints) < len(cur.Endpoints) {
		return false, false
	}
	had := make(map[string]discoveryv1.Endpoint, len(cur.Endpoints))
	for _, e := range cur.Endpoints {
		if e.Hostname == nil {
			return false, false
		}
		had[*e.Hostname] = e
	}
	kept := 0
	for _, e := range want.Endpoints {
		if e.Hostname == nil {
			return false, false
		}
		c, seen := had[*e.Hostname]
		switch {
		case !seen && *e.Hostname == master:
			return false, false
		case !seen:
			more = true
		case !equality.Semantic.DeepEqual(c, e):
			return false, false
		default:
			kept++
		}
	}
	return more, kept == len(cur.Endpoints)
}

// clusterNamespaces are the hub namespaces of the clusters that hold a
// member of r, sorted.
func clusterNamespaces(r *ledger.Reservation) []string {
	set := map[string]bool{}
	for _, m := range r.Members {
		set[v1alpha1.ClusterNamespace(m.Cluster)] = true
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// dropServices deletes the job's cached Services outside namespaces.
func (d *Dispatcher) dropServices(ctx context.Context, job string, namespaces []string) error {
	svcs, err := d.pods.services.servicesOf(job)
	if err != nil {
		return err
	}
	var errs []error
	for _, svc := range svcs {
		if v1alpha1.IsClusterNamespace(svc.Namespace) && !slices.Contains(namespaces, svc.Namespace) {
			err := d.hub.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
			if err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("delete rendezvous service %s/%s: %w", svc.Namespace, svc.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// applyService creates the job's Service in namespace when the cache has
// none or members are being created (create: the cache may still hold
// the previous epoch's, deleted with it; only while a member is missing,
// not on every pass of a preparing gang, each of which cost the hub
// cluster's API server a refused create per cluster), and drops the selector and
// updates the ports of one that has them wrong (a Service an older hub
// created with a selector).
func (d *Dispatcher) applyService(ctx context.Context, j *v1alpha1.Job, namespace string, create bool) error {
	want := headlessService(j, namespace)
	api := d.hub.CoreV1().Services(namespace)
	cur, err := d.pods.services.services.Services(namespace).Get(want.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if cur == nil || create {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		switch {
		case err == nil:
			return nil
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("create rendezvous service in %s: %w", namespace, err)
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
		return fmt.Errorf("update rendezvous service in %s: %w", namespace, err)
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

// deleteRendezvous removes the job's Services and EndpointSlices, in
// every cluster namespace.
func (d *Dispatcher) deleteRendezvous(ctx context.Context, job string) error {
	var errs []error
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job}
	// The API server, not the cache: what was created a moment ago must go too.
	svcs, err := d.hub.CoreV1().Services(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, svc := range svcs.Items {
			if svc.Name != v1alpha1.ServiceName(job) || !v1alpha1.IsClusterNamespace(svc.Namespace) {
				continue
			}
			err := d.hub.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
			if err != nil && !isNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	l, err := d.hub.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, sl := range l.Items {
		if v1alpha1.IsClusterNamespace(sl.Namespace) {
			errs = append(errs, d.deleteSlice(ctx, sl.Namespace, sl.Name))
		}
	}
	return errors.Join(errs...)
}

func (d *Dispatcher) deleteSlice(ctx context.Context, namespace, name string) error {
	err := d.hub.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete rendezvous endpoint slice %s/%s: %w", namespace, name, err)
	}
	return nil
}

// sweepRendezvous removes the cached rendezvous Services and EndpointSlices
// of jobs that have neither a reservation nor a member pod (live says
// which do): what a teardown's deletion left behind when it failed.
func (d *Dispatcher) sweepRendezvous(ctx context.Context, live func(job string) bool) error {
	rc := d.pods.services
	orphans := map[string]bool{}
	svcs, err := rc.services.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range svcs {
		if job := s.Labels[v1alpha1.LabelJob]; v1alpha1.IsClusterNamespace(s.Namespace) && !orphans[job] && !live(job) {
			orphans[job] = true
		}
	}
	sls, err := rc.slices.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range sls {
		if job := s.Labels[v1alpha1.LabelJob]; v1alpha1.IsClusterNamespace(s.Namespace) && !orphans[job] && !live(job) {
			orphans[job] = true
		}
	}
	var errs []error
	for job := range orphans {
		errs = append(errs, d.deleteRendezvous(ctx, job))
	}
	return errors.Join(errs...)
}
