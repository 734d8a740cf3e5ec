// SPDX-License-Identifier: Apache-2.0

package nodehealth

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// DefaultGrace is how long a node failure lasts before its members stop.
const DefaultGrace = 10 * time.Second

// Stopper stops a local member on the agent's own decision, reporting its
// hub pod Failed with reason first (podsync.Syncer.Fail). grace nil is the
// pod's own.
type Stopper interface {
	Fail(ctx context.Context, ns, name, reason, msg string, grace *int64) error
}

// Config says what a node failure is.
type Config struct {
	// Grace is how long a failure must last (default DefaultGrace).
	Grace time.Duration
	// Taints are taint keys that mean the node's GPUs failed.
	Taints []string
	// Conditions are node condition types that, True, mean the node's GPUs
	// failed.
	Conditions []string
	// Spot names the taints and labels that mark a node to go (spot.go):
	// its members are marked NodeReclaimed at once and keep running until
	// the hub moves their gangs with their preemption grace.
	Spot Spot
	// Clock is the time source (default: real time).
	Clock clock.WithDelayedExecution
}

// Watcher stops the gang members of failed nodes (see the package doc).
type Watcher struct {
	cfg     Config
	cache   *cluster.Cache
	stopper Stopper
	q       workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// since is when each current failure of a node was first seen.
	since map[string]map[string]time.Time
	// stopped are the members already stopped, per node, until they leave.
	stopped map[string]map[string]bool
	// timers is when a node's pending re-check fires.
	timers map[string]time.Time
}

// New returns a Watcher of the cluster c caches that stops members through s.
func New(c *cluster.Cache, s Stopper, cfg Config) *Watcher {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	return &Watcher{cfg: cfg, cache: c, stopper: s, q: q, timers: map[string]time.Time{},
		since: map[string]map[string]time.Time{}, stopped: map[string]map[string]bool{}}
}

// Run checks nodes as they and their members change until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.q.ShutDown()
	node := func(o any) {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if n, ok := o.(*corev1.Node); ok {
			w.q.Add(n.Name)
		}
	}
	pod := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && isMember(p) {
			if n := nodeOf(p); n != "" {
				w.q.Add(n)
			}
		}
	}
	regs := make([]cache.ResourceEventHandlerRegistration, 0, 2)
	for _, add := range []func() (cache.ResourceEventHandlerRegistration, error){
		func() (cache.ResourceEventHandlerRegistration, error) {
			return w.cache.AddNodeHandler(cache.ResourceEventHandlerFuncs{AddFunc: node,
				UpdateFunc: func(_, o any) { node(o) }, DeleteFunc: node})
		},
		func() (cache.ResourceEventHandlerRegistration, error) {
			return w.cache.AddPodHandler(cache.ResourceEventHandlerFuncs{AddFunc: pod,
				UpdateFunc: func(_, o any) { pod(o) }})
		},
	} {
		r, err := add()
		if err != nil {
			return err
		}
		regs = append(regs, r)
	}
	if !w.cache.WaitForCacheSync(ctx, regs...) {
		return nil
	}
	go func() { <-ctx.Done(); w.q.ShutDown() }()
	for w.next(ctx) {
	}
	return nil
}

func (w *Watcher) next(ctx context.Context) bool {
	n, quit := w.q.Get()
	if quit {
		return false
	}
	defer w.q.Done(n)
	if err := w.check(ctx, n); err != nil {
		klog.FromContext(ctx).Error(err, "Stop members of a failed node", "node", n)
		w.q.AddRateLimited(n)
		return true
	}
	w.q.Forget(n)
	return true
}

// nodeOf is the node a member is bound to, or else the one it targets.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return p.Annotations[v1alpha1.AnnotationTargetNode]
}

// check stops the members of node whose failure outlasted the grace, and
// checks the node again when the next one will have.
func (w *Watcher) check(ctx context.Context, name string) error {
	n, err := w.cache.Nodes().Get(name)
	if apierrors.IsNotFound(err) {
		n, err = nil, nil
	}
	if err != nil {
		return err
	}
	bound, err := w.cache.PodsOnNode(name)
	if err != nil {
		return err
	}
	targeting, err := w.cache.PodsTargeting(name)
	if err != nil {
		return err
	}
	var members []*corev1.Pod
	for _, p := range append(bound, targeting...) {
		if isMember(p) {
			members = append(members, p)
		}
	}
	if msg, ok := w.cfg.Spot.Reclaimed(n); ok {
		if err := w.markReclaimed(ctx, members, msg); err != nil {
			return err
		}
	}
	due, wait := w.due(name, w.nodeFailures(n, bound), n == nil && len(members) == 0)
	if wait > 0 {
		w.recheck(name, wait)
	}
	for _, f := range due {
		for _, p := range members {
			if !f.applies(p) || !w.markStopped(name, podKey(p)) {
				continue
			}
			var grace *int64
			if f.reason == v1alpha1.ReasonNodeNotReady {
				zero := int64(0)
				grace = &zero
			}
			if err := w.stopper.Fail(ctx, p.Namespace, p.Name, f.reason, f.message, grace); err != nil {
				w.unmarkStopped(name, podKey(p))
				return err
			}
		}
	}
	w.forgetGone(name, members)
	return nil
}

// due records when each failure of node was first seen and returns those
// past the grace (node-wide ones first) and how long until the next one is.
// forget drops the node's state (a deleted node without members).
func (w *Watcher) due(node string, fs map[string]failure, forget bool) ([]failure, time.Duration) {
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if forget || len(fs) == 0 {
		delete(w.since, node)
		return nil, 0
	}
	seen := w.since[node]
	if seen == nil {
		seen = map[string]time.Time{}
		w.since[node] = seen
	}
	for k := range seen {
		if _, ok := fs[k]; !ok {
			delete(seen, k)
		}
	}
	kinds := make([]string, 0, len(fs))
	for k := range fs {
		kinds = append(kinds, k)
		if _, ok := seen[k]; !ok {
			seen[k] = now
		}
	}
	sort.Slice(kinds, func(i, j int) bool {
		ri, rj := fs[kinds[i]].reason == v1alpha1.ReasonNodeNotReady, fs[kinds[j]].reason == v1alpha1.ReasonNodeNotReady
		if ri != rj {
			return ri
		}
		return kinds[i] < kinds[j]
	})
	var due []failure
	var wait time.Duration
	for _, k := range kinds {
		left := w.cfg.Grace - now.Sub(seen[k])
		if left <= 0 {
			due = append(due, fs[k])
		} else if wait == 0 || left < wait {
			wait = left
		}
	}
	return due, wait
}

// podKey identifies a member pod.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name + "/" + string(p.UID) }

// recheck checks node again after d (on the configured clock) unless an
// earlier re-check is pending.
func (w *Watcher) recheck(node string, d time.Duration) {
	at := w.cfg.Clock.Now().Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.timers[node]; ok && !t.After(at) {
		return
	}
	w.timers[node] = at
	w.cfg.Clock.AfterFunc(d, func() {
		w.mu.Lock()
		if w.timers[node].Equal(at) {
			delete(w.timers, node)
		}
		w.mu.Unlock()
		w.q.Add(node)
	})
}

// markStopped records that member uid of node is being stopped; false if it
// was already.
func (w *Watcher) markStopped(node string, uid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stopped[node]
	if s == nil {
		s = map[string]bool{}
		w.stopped[node] = s
	}
	if s[uid] {
		return false
	}
	s[uid] = true
	return true
}

func (w *Watcher) unmarkStopped(node string, uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.stopped[node], uid)
}

// forgetGone drops the stopped marks of members no longer on node.
func (w *Watcher) forgetGone(node string, members []*corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stopped[node]
	if s == nil {
		return
	}
	live := map[string]bool{}
	for _, p := range members {
		live[podKey(p)] = true
	}
	for uid := range s {
		if !live[uid] {
			delete(s, uid)
		}
	}
	if len(s) == 0 {
		delete(w.stopped, node)
	}
}
