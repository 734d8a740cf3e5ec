// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
)

// DefaultResync is how often Run checks every copy even without an event.
const DefaultResync = time.Minute

// ref is one referenced object in a namespace of the workload cluster; its
// hub object is the one of the same kind and name in the Syncer's hub
// namespace.
type ref struct {
	Namespace string
	podrefs.Object
}

// claim is a hub pod Ensure prepared and that was not released yet.
type claim struct {
	hub  *corev1.Pod
	refs []ref
}

// Syncer keeps the copies of the objects members reference (package doc).
type Syncer struct {
	hub kubernetes.Interface
	// hubNS is the cluster's namespace on the hub, where the hub keeps
	// its copies of what the cluster's members reference: the only one
	// the agent may read.
	hubNS    string
	local    kubernetes.Interface
	cache    *cluster.Cache
	recorder record.EventRecorder
	resync   time.Duration

	// writing is held shared by Ensure and the watches while they write
	// copies, and exclusively by collect while it decides which copies go,
	// so that a copy is never deleted between its claim and its write.
	writing sync.RWMutex
	mu      sync.Mutex
	claims  map[types.UID]*claim
	watches map[ref]*hubWatch
	kick    chan struct{}
}

// Option configures a Syncer.
type Option func(*Syncer)

// WithResync sets how often every copy is checked without an event.
func WithResync(d time.Duration) Option { return func(s *Syncer) { s.resync = d } }

// New returns a Syncer that reads namespace hubNamespace of the hub cluster
// (the cluster's, v1alpha1.ClusterNamespace) through hub and writes copies
// into the workload cluster c caches.
func New(hub kubernetes.Interface, hubNamespace string, c *cluster.Cache, opts ...Option) *Syncer {
	s := &Syncer{hub: hub, hubNS: hubNamespace, local: c.Client(), cache: c, resync: DefaultResync,
		claims: map[types.UID]*claim{}, watches: map[ref]*hubWatch{}, kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetRecorder sets the recorder of events on hub pods (call before Run).
func (s *Syncer) SetRecorder(r record.EventRecorder) { s.recorder = r }

// Run follows the local member pods and the referenced hub objects, and
// deletes the copies no member references, until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	reg, err := s.cache.AddPodHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(o any) bool {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			p, ok := o.(*corev1.Pod)
			return ok && p.Labels[v1alpha1.LabelManaged] == "true"
		},
		Handler: cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { s.wake() }},
	})
	if err != nil {
		return err
	}
	if !s.cache.WaitForCacheSync(ctx, reg) {
		return nil
	}
	defer s.stopWatches()
	t := time.NewTicker(s.resync)
	defer t.Stop()
	for {
		if err := s.collect(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Dependency copies not collected; retrying")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-t.C:
		}
	}
}

// wake asks Run for a collection pass.
func (s *Syncer) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Release drops the claim of a hub pod; its copies go once no local pod
// references them either.
func (s *Syncer) Release(hub *corev1.Pod) {
	s.mu.Lock()
	_, ok := s.claims[hub.UID]
	delete(s.claims, hub.UID)
	s.mu.Unlock()
	if ok {
		s.wake()
	}
}

// refsOf returns the distinct objects local pod lp references, with whether
// every reference to each is optional.
func refsOf(lp *corev1.Pod) ([]ref, map[ref]bool) {
	ns := lp.Namespace
	objs, optional := podrefs.Objects(podrefs.References(&lp.Spec, field.NewPath("spec")))
	out := make([]ref, len(objs))
	opt := make(map[ref]bool, len(objs))
	for i, o := range objs {
		out[i] = ref{Namespace: ns, Object: o}
		opt[out[i]] = optional[o]
	}
	return out, opt
}

// joinJobs is the AnnotationCopyJobs value of a set of jobs.
func joinJobs(set map[string]bool) string {
	out := make([]string, 0, len(set))
	for j := range set {
		if j != "" {
			out = append(out, j)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// jobOf is the job of a member pod.
func jobOf(p *corev1.Pod) string { return p.Labels[v1alpha1.LabelJob] }
