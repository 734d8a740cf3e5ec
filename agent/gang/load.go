// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// Load rebuilds the newest epoch of every job, once, before members are
// accepted: from the epoch annotation of every local member pod in the
// shared cache (it waits for the cache to sync) and, with WithRecord, from
// the record of earlier runs. Every job found is checked for stale local
// members. Run calls it; calling it again is a no-op.
func (g *Gate) Load(ctx context.Context) error {
	if g.isLoaded() {
		return nil
	}
	if !g.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("load gang epochs: %w", context.Cause(ctx))
	}
	pods, err := g.cache.Pods().List(labels.Everything())
	if err != nil {
		return err
	}
	found := map[string]int64{}
	for _, p := range pods {
		if job, epoch, ok := member(p); ok {
			found[job] = max(found[job], epoch)
		}
	}
	var recorded map[string]int64
	if g.record != nil {
		if recorded, err = g.record.load(ctx, g.local); err != nil {
			return err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isLoaded() {
		return nil
	}
	for _, m := range []map[string]int64{found, recorded} {
		for job, epoch := range m {
			g.epochs[job] = max(g.epochs[job], epoch)
		}
	}
	for job := range g.epochs {
		g.stale.Add(job)
	}
	close(g.loaded)
	klog.FromContext(ctx).V(2).Info("Gang epochs loaded", "jobs", len(g.epochs), "fromPods", len(found), "fromRecord", len(recorded))
	return nil
}

// loadRetrying calls Load until it succeeds (a workload cluster that does
// not answer, or refuses the record's read, delays every member, not the
// agent's other parts); false if ctx ends first.
func (g *Gate) loadRetrying(ctx context.Context) bool {
	backoff := 200 * time.Millisecond
	for {
		err := g.Load(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		klog.FromContext(ctx).Error(err, "Load gang epochs; members wait", "retryIn", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
