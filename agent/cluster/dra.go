// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/tools/cache"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// draInformers watch the Dynamic Resource Allocation objects the inventory
// reads: ResourceSlices (devices), ResourceClaims (their allocations) and
// DeviceClasses. They run in a factory of their own, started only when the
// cluster serves resource.k8s.io/v1.
type draInformers struct {
	factory informers.SharedInformerFactory
	slices  resourceinformers.ResourceSliceInformer
	claims  resourceinformers.ResourceClaimInformer
	classes resourceinformers.DeviceClassInformer
}

func newDRAInformers(f informers.SharedInformerFactory) *draInformers {
	d := &draInformers{factory: f, slices: f.Resource().V1().ResourceSlices(),
		claims: f.Resource().V1().ResourceClaims(), classes: f.Resource().V1().DeviceClasses()}
	d.slices.Informer()
	d.claims.Informer()
	d.classes.Informer()
	return d
}

func (d *draInformers) synced() []cache.InformerSynced {
	return []cache.InformerSynced{d.slices.Informer().HasSynced, d.claims.Informer().HasSynced,
		d.classes.Informer().HasSynced}
}

// servesDRA reports whether the cluster serves the resource.k8s.io/v1
// resources the inventory reads.
func (c *Cache) servesDRA(ctx context.Context) (bool, error) {
	return c.serves(ctx, resourcev1.SchemeGroupVersion.String(), "resourceslices", "resourceclaims", "deviceclasses")
}

// ServesDRA reports, once Synced is closed, whether the cluster serves
// Dynamic Resource Allocation (resource.k8s.io/v1) and the cache watches it.
func (c *Cache) ServesDRA() bool {
	select {
	case <-c.synced:
		return c.draServed
	default:
		return false
	}
}

// AddDRAHandler registers h for ResourceSlice, ResourceClaim and
// DeviceClass events. Call it after Synced, and only where ServesDRA.
func (c *Cache) AddDRAHandler(h cache.ResourceEventHandler) ([]cache.ResourceEventHandlerRegistration, error) {
	if !c.ServesDRA() {
		return nil, fmt.Errorf("workload cluster does not serve resource.k8s.io/v1 (or the cache has not synced)")
	}
	var regs []cache.ResourceEventHandlerRegistration
	for _, inf := range []cache.SharedIndexInformer{c.dra.slices.Informer(), c.dra.claims.Informer(), c.dra.classes.Informer()} {
		r, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		regs = append(regs, r)
	}
	return regs, nil
}

// DRA returns the cached DRA objects (empty where the cluster does not serve them).
func (c *Cache) DRA() (fedinv.DRA, error) {
	if !c.ServesDRA() {
		return fedinv.DRA{}, nil
	}
	slices, err := c.dra.slices.Lister().List(labels.Everything())
	if err != nil {
		return fedinv.DRA{}, fmt.Errorf("list resourceslices from cache: %w", err)
	}
	claims, err := c.dra.claims.Lister().List(labels.Everything())
	if err != nil {
		return fedinv.DRA{}, fmt.Errorf("list resourceclaims from cache: %w", err)
	}
	classes, err := c.dra.classes.Lister().List(labels.Everything())
	if err != nil {
		return fedinv.DRA{}, fmt.Errorf("list deviceclasses from cache: %w", err)
	}
	return fedinv.DRA{Slices: slices, Claims: claims, Classes: classes}, nil
}
