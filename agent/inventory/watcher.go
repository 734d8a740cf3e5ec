package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// DefaultInterval is the least time between two inventory builds.
const DefaultInterval = 200 * time.Millisecond

// Watcher publishes the cluster's GPU inventory whenever it changes.
type Watcher struct {
	client   kubernetes.Interface
	cluster  string
	keys     fedinv.LabelKeys
	labels   map[string]string
	interval time.Duration
	settle   time.Duration

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

// NewWatcher returns a Watcher of the cluster client reaches.
func NewWatcher(client kubernetes.Interface, cluster string, keys fedinv.LabelKeys, opts ...Option) *Watcher {
	w := &Watcher{client: client, cluster: cluster, keys: keys, interval: DefaultInterval,
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

// Run watches until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("inventory")
	f := informers.NewSharedInformerFactoryWithOptions(w.client, 0)
	nodes := f.Core().V1().Nodes()
	podInf := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
	}))
	pods := podInf.Core().V1().Pods()
	if err := pods.Informer().SetTransform(trimPod); err != nil {
		return err
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.markDirty() },
		UpdateFunc: func(any, any) { w.markDirty() },
		DeleteFunc: func(any) { w.markDirty() },
	}
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), pods.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	podInf.Start(ctx.Done())
	defer f.Shutdown()
	defer podInf.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced, pods.Informer().HasSynced) {
		return ctx.Err()
	}
	log.Info("Inventory caches synced", "cluster", w.cluster)
	w.markDirty()
	return w.loop(ctx, nodes.Lister(), pods.Lister())
}

func (w *Watcher) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// loop builds at most once per interval: a first change is picked up after a
// short settle delay, a burst is folded into the next build.
func (w *Watcher) loop(ctx context.Context, nodes corelisters.NodeLister, pods corelisters.PodLister) error {
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
		if err := w.build(nodes, pods); err != nil {
			return err
		}
	}
}

func (w *Watcher) build(nodes corelisters.NodeLister, pods corelisters.PodLister) error {
	start := time.Now()
	ns, err := nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes from cache: %w", err)
	}
	ps, err := pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods from cache: %w", err)
	}
	c := fedinv.Build(w.cluster, ns, ps, w.keys)
	c.Labels = w.labels
	metricBuildSeconds.Observe(time.Since(start).Seconds())
	w.publish(c)
	return nil
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

// trimPod keeps only what the inventory reads, to bound the cache's memory.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}}
	out.Spec.NodeName = p.Spec.NodeName
	out.Status.Phase = p.Status.Phase
	out.Spec.Containers = trimContainers(p.Spec.Containers)
	out.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	return out, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
