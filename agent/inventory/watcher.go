// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/federation/devicesel"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// DefaultInterval is the least time between two inventory builds.
const DefaultInterval = 200 * time.Millisecond

// Watcher publishes the cluster's GPU inventory whenever it changes.
type Watcher struct {
	cache   *cluster.Cache
	cluster string
	topo    fedinv.TopologyChoice
	labels  map[string]string
	// gone marks nodes to report unschedulable (nil: none).
	gone     func(*corev1.Node) bool
	interval time.Duration
	settle   time.Duration
	log      klog.Logger

	dirty  chan struct{}
	mu     sync.Mutex
	subs   []chan fedinv.Cluster
	last   *fedinv.Cluster
	hash   uint64
	gen    int64
	synced chan struct{}
}

// Option configures a Watcher.
type Option func(*Watcher)

// WithInterval sets the least time between builds (default DefaultInterval).
func WithInterval(d time.Duration) Option {
	return func(w *Watcher) {
		if d > 0 {
			w.interval = d
		}
	}
}

// WithLabels sets the cluster labels carried in every report.
func WithLabels(l map[string]string) Option { return func(w *Watcher) { w.labels = l } }

// WithUnschedulable reports the nodes for which gone returns true as
// unschedulable, so that the hub places no gang there (spot nodes marked to
// go: agent/nodehealth.Spot).
func WithUnschedulable(gone func(*corev1.Node) bool) Option {
	return func(w *Watcher) { w.gone = gone }
}

// NewWatcher returns a Watcher of the cluster c caches, reported under its
// federation name. topo picks the topology map; auto-detection runs again on
// every build, so a cluster labelled later is picked up.
func NewWatcher(c *cluster.Cache, name string, topo fedinv.TopologyChoice, opts ...Option) *Watcher {
	w := &Watcher{cache: c, cluster: name, topo: topo, interval: DefaultInterval, log: klog.Background(),
		dirty: make(chan struct{}, 1), synced: make(chan struct{}),
		// Generations start at the start time so they keep rising across restarts.
		gen: time.Now().UnixMilli() * 1000}
	for _, o := range opts {
		o(w)
	}
	w.settle = w.interval / 10
	return w
}

// Subscribe returns a channel that always holds the latest changed inventory
// (older unread values are dropped). Call before Run.
func (w *Watcher) Subscribe() <-chan fedinv.Cluster {
	ch := make(chan fedinv.Cluster, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, ch)
	return ch
}

// Synced is closed once the caches are filled and the first inventory is published.
func (w *Watcher) Synced() <-chan struct{} { return w.synced }

// Latest returns the last published inventory, or false before the first one.
func (w *Watcher) Latest() (fedinv.Cluster, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return fedinv.Cluster{}, false
	}
	return *w.last, true
}

// TopologyKeys returns the label keys of the topology map the last
// inventory was built with, or false before the first one.
func (w *Watcher) TopologyKeys() (fedinv.LabelKeys, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil || w.last.Topology == nil {
		return fedinv.LabelKeys{}, false
	}
	return w.last.Topology.Keys, true
}

// Run publishes the inventory until ctx ends: once the cache has synced, and
// after every node or pod change, and where the cluster serves DRA every
// ResourceSlice, ResourceClaim or DeviceClass change (at most once per interval).
func (w *Watcher) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("inventory")
	w.log = log
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.markDirty() },
		UpdateFunc: func(any, any) { w.markDirty() },
		DeleteFunc: func(any) { w.markDirty() },
	}
	nodes, err := w.cache.AddNodeHandler(h)
	if err != nil {
		return err
	}
	pods, err := w.cache.AddPodHandler(h)
	if err != nil {
		return err
	}
	if !w.cache.WaitForCacheSync(ctx, nodes, pods) {
		return ctx.Err()
	}
	if w.cache.ServesDRA() { // GPUs published as ResourceSlices (agent/cluster dra.go)
		regs, err := w.cache.AddDRAHandler(h)
		if err != nil {
			return err
		}
		if !w.cache.WaitForCacheSync(ctx, regs...) {
			return ctx.Err()
		}
	}
	log.Info("Inventory caches synced", "cluster", w.cluster, "dra", w.cache.ServesDRA())
	w.markDirty()
	return w.loop(ctx)
}

func (w *Watcher) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// loop builds at most once per interval: a first change is picked up after a
// short settle delay, a burst is folded into the next build.
func (w *Watcher) loop(ctx context.Context) error {
	var lastBuild time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.dirty:
		}
		wait := max(w.settle, time.Until(lastBuild.Add(w.interval)))
		if !sleep(ctx, wait) {
			return nil
		}
		select { // changes during the wait are in this build
		case <-w.dirty:
		default:
		}
		lastBuild = time.Now()
		if err := w.build(); err != nil {
			return err
		}
	}
}

// build rebuilds the inventory from the cache; terminated pods are in the
// cache (the gang gate and the pod syncer read them) and Build skips them.
func (w *Watcher) build() error {
	start := time.Now()
	ns, err := w.cache.Nodes().List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes from cache: %w", err)
	}
	ps, err := w.cache.Pods().List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods from cache: %w", err)
	}
	dra, err := w.cache.DRA()
	if err != nil {
		return err
	}
	draNodes := dra.Nodes()
	topo := w.topo.ResolveWith(ns, func(n *corev1.Node) bool {
		return fedinv.IsGPUNode(n) || draNodes[n.Name].GPUs > 0
	})
	c := fedinv.BuildDRA(w.cluster, ns, ps, topo.Keys, dra)
	devicesel.SetClasses(&c, dra.Classes)
	c.Labels = w.labels
	c.Topology = &topo
	c.ComputeDomains = w.cache.ServesComputeDomains()
	w.logTopology(topo)
	if w.gone != nil {
		goneNodes := map[string]bool{}
		for _, n := range ns {
			if w.gone(n) {
				goneNodes[n.Name] = true
			}
		}
		for i := range c.Nodes {
			if goneNodes[c.Nodes[i].Name] {
				c.Nodes[i].Unschedulable = true
			}
		}
	}
	metricBuildSeconds.Observe(time.Since(start).Seconds())
	w.publish(c)
	return nil
}

// logTopology logs the topology map when it differs from the last one published.
func (w *Watcher) logTopology(t fedinv.Topology) {
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	if last != nil && last.Topology != nil && *last.Topology == t {
		return
	}
	if t.Message != "" {
		w.log.Info("Topology labels not found", "cluster", w.cluster, "source", t.Source, "preset", t.Preset, "message", t.Message)
		return
	}
	w.log.Info("Topology map", "cluster", w.cluster, "source", t.Source, "preset", t.Preset,
		"nvlink", t.Keys.NVLink, "rack", t.Keys.Rack, "block", t.Keys.Block, "zone", t.Keys.Zone)
}

func (w *Watcher) publish(c fedinv.Cluster) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := c.Hash()
	if w.last != nil && w.hash == h && w.last.Equal(c) {
		return
	}
	w.hash = h
	w.gen++
	c.Generation = w.gen
	w.last = &c
	metricGeneration.Set(float64(c.Generation))
	for _, ch := range w.subs {
		select { // keep only the latest value
		case <-ch:
		default:
		}
		ch <- c
	}
	select {
	case <-w.synced:
	default:
		close(w.synced)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
