// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/internal/kubeindex"
)

// ErrNotSynced is returned by Run when ctx ends before the cache filled.
var ErrNotSynced = errors.New("workload cluster cache did not sync")

// Cache is the informer cache of one workload cluster. Create it with New,
// let the parts register their handlers, and Run it once.
type Cache struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	nodes   coreinformers.NodeInformer
	pods    coreinformers.PodInformer
	dra     *draInformers
	// draServed, podGroupsServed and computeDomainsServed are set before
	// synced is closed (ServesDRA, ServesPodGroups, ServesComputeDomains).
	draServed, podGroupsServed, computeDomainsServed bool
	synced                                           chan struct{}
}

// New returns the cache of the cluster client reaches. Its informers (Nodes
// and Pods of every namespace, with the indexes of indexes.go, and the DRA
// objects of dra.go where the cluster serves them) are declared here, before
// Run starts them.
func New(client kubernetes.Interface) (*Cache, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	c := &Cache{client: client, factory: f, nodes: f.Core().V1().Nodes(), pods: f.Core().V1().Pods(),
		synced: make(chan struct{})}
	c.dra = newDRAInformers(informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTransform(stripManagedFields)))
	c.nodes.Informer() // registered with the factory before Start
	if err := c.pods.Informer().AddIndexers(podIndexers); err != nil {
		return nil, err
	}
	return c, nil
}

// Client is the workload cluster's API client (for writes and for reads the
// cache cannot serve, such as a fresh copy after a conflict).
func (c *Cache) Client() kubernetes.Interface { return c.client }

// Nodes lists the cluster's nodes from the cache.
func (c *Cache) Nodes() corelisters.NodeLister { return c.nodes.Lister() }

// Pods lists the cluster's pods, of every namespace, from the cache.
func (c *Cache) Pods() corelisters.PodLister { return c.pods.Lister() }

// PodsOnNode returns the cached pods bound to node.
func (c *Cache) PodsOnNode(node string) ([]*corev1.Pod, error) { return c.byIndex(IndexNodeName, node) }

// PodsTargeting returns the cached unbound pods whose target-node annotation
// names node (prepared or preparing gang members).
func (c *Cache) PodsTargeting(node string) ([]*corev1.Pod, error) {
	return c.byIndex(IndexTargetNode, node)
}

// PodsOfVirtualNode returns the cached managed local pods whose hub pod is
// bound to the virtual node vnode.
func (c *Cache) PodsOfVirtualNode(vnode string) ([]*corev1.Pod, error) {
	return c.byIndex(IndexVirtualNode, vnode)
}

// PodsOfJob returns the cached pods labelled as members of job
// (v1alpha1.LabelJob), in namespace ns, or in every namespace when ns is
// empty: from an index, not a pass over every pod.
func (c *Cache) PodsOfJob(ns, job string) ([]*corev1.Pod, error) {
	pods, err := c.byIndex(IndexJob, job)
	if err != nil || ns == "" {
		return pods, err
	}
	out := pods[:0]
	for _, p := range pods {
		if p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out, nil
}

// PodsOfHubPod returns the cached managed local pods of hub pod ns/name
// (one, but for a copy left in another namespace).
func (c *Cache) PodsOfHubPod(ns, name string) ([]*corev1.Pod, error) {
	return c.byIndex(IndexHubPod, hubPodKey(ns, name))
}

func (c *Cache) byIndex(index, value string) ([]*corev1.Pod, error) {
	return kubeindex.Of[*corev1.Pod](c.pods.Informer().GetIndexer(), index, value)
}

// AddPodHandler registers h for pod events; a handler added after Run
// started first sees every cached pod as an add. Wait for the returned
// registration's HasSynced before relying on having seen them all.
func (c *Cache) AddPodHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return c.pods.Informer().AddEventHandler(h)
}

// AddNodeHandler registers h for node events (see AddPodHandler).
func (c *Cache) AddNodeHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return c.nodes.Informer().AddEventHandler(h)
}

// Synced is closed once Run has filled the cache.
func (c *Cache) Synced() <-chan struct{} { return c.synced }

// WaitForCacheSync blocks until the cache and the given handler
// registrations have synced; it returns false if ctx ends first.
func (c *Cache) WaitForCacheSync(ctx context.Context, handlers ...cache.ResourceEventHandlerRegistration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-c.synced:
	}
	syncs := make([]cache.InformerSynced, 0, len(handlers))
	for _, h := range handlers {
		syncs = append(syncs, h.HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), syncs...)
}

// Run starts the informers, closes Synced once they filled, and watches
// until ctx ends. If ctx ends before the first sync it returns ErrNotSynced
// wrapping ctx's error.
func (c *Cache) Run(ctx context.Context) error {
	served, err := c.servesDRA(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSynced, err)
	}
	groups, err := c.servesPodGroups(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSynced, err)
	}
	domains, err := c.servesComputeDomains(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSynced, err)
	}
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	syncs := []cache.InformerSynced{c.nodes.Informer().HasSynced, c.pods.Informer().HasSynced}
	if served {
		c.dra.factory.Start(ctx.Done())
		defer c.dra.factory.Shutdown()
		syncs = append(syncs, c.dra.synced()...)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return fmt.Errorf("%w: %w", ErrNotSynced, context.Cause(ctx))
	}
	c.draServed, c.podGroupsServed, c.computeDomainsServed = served, groups, domains
	klog.FromContext(ctx).V(2).Info("Workload cluster cache synced", "dra", served, "podGroups", groups,
		"computeDomains", domains)
	close(c.synced)
	<-ctx.Done()
	return nil
}
