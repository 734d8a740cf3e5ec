// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// ErrStaleEpoch refuses a member of an epoch older than one already seen.
var ErrStaleEpoch = errors.New("stale placement epoch")

// ErrNotLoaded refuses members until Load has rebuilt the epochs of a
// restarted agent (the agent starts its virtual nodes only after Load).
var ErrNotLoaded = errors.New("gang epochs not loaded yet")

// Stopper stops a local member on the agent's own decision; the pod syncer
// (podsync.Syncer.Fail) implements it, reporting the hub pod Failed with the
// reason before it deletes the local pod. grace nil is the pod's own.
type Stopper interface {
	Fail(ctx context.Context, ns, name, reason, msg string, grace *int64) error
}

// Gate gates, prepares and commits the local pods of gang members, keeps
// the newest epoch of every job (across restarts: see Load) and removes
// local members of older epochs. It is the podsync.Gate of the agent.
type Gate struct {
	cache   *cluster.Cache
	local   kubernetes.Interface
	clock   clock.PassiveClock
	record  *record // nil: epochs are rebuilt from the local pods only
	stopper Stopper
	stale   workqueue.TypedRateLimitingInterface[string]
	mu      sync.Mutex
	loaded  chan struct{}
	// epochs is the newest epoch seen per "<namespace>/<job>".
	epochs map[string]int64
	// committed is, per "<namespace>/<job>", the newest epoch whose
	// commit reached this agent (commitSiblings): every local member of it
	// outside a compute domain is lifted (the lift queue).
	committed map[string]int64
	// lifts are the local members of committed epochs whose gate is to be
	// lifted, retried until it is (lift.go).
	lifts workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// liftCalls are the gate lifts in flight or done that the cache may
	// not show yet, by member and epoch (lift.go).
	liftCalls map[string]*liftCall
	liftPrune int
	// creator creates held members at their commit (nil: none are held);
	// holds are the held members, creates the held members of committed
	// epochs to create (hold.go).
	creator Creator
	holds   holds
	creates workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// recent are members prepared here that the cache may not show (yet)
	// as prepared, by target node and "<namespace>/<name>" (cache.go).
	recent map[string]map[string]recentPod
	// stopped are the stale members already handed to the stopper, per
	// job, so a job queued twice before the cache shows the deletion is
	// not stopped twice.
	stopped   map[string]map[string]bool
	nodeLocks map[string]*sync.Mutex
	// topology returns the agent's topology map (nil: none; slice
	// PodGroups then carry no topology constraint).
	topology func() (fedinv.LabelKeys, bool)
	// noGroupTopology is set once the cluster refused a PodGroup's
	// topology constraint.
	noGroupTopology atomic.Bool
	// domains creates and reads ComputeDomains (nil: none are made;
	// computedomain.go); watched are the committed ones not seen Ready yet.
	domains       dynamic.Interface
	domainTimeout time.Duration
	watched       map[string]watchedDomain
}

// Option configures a Gate.
type Option func(*Gate)

// WithRecord keeps the newest epoch of every job also in the ConfigMap
// EpochsConfigMap of namespace (the agent's own), so that a restarted agent
// refuses stale epochs even when the job's local pods are gone.
func WithRecord(namespace string) Option {
	return func(g *Gate) { g.record = &record{namespace: namespace} }
}

// WithTopology gives the Gate the agent's topology map, the label keys of
// NVLink domain, rack, block and zone (ok false while unknown): a slice's
// PodGroup is constrained to the tightest level its nodes share.
func WithTopology(keys func() (fedinv.LabelKeys, bool)) Option {
	return func(g *Gate) { g.topology = keys }
}

// WithClock sets the clock of the record's retention (default: real time).
func WithClock(c clock.PassiveClock) Option { return func(g *Gate) { g.clock = c } }

// New returns a Gate on the workload cluster c caches. Fit checks read the
// cache; Load (which Run calls) must end before members are accepted.
func New(c *cluster.Cache, opts ...Option) *Gate {
	g := &Gate{cache: c, local: c.Client(), clock: clock.RealClock{}, epochs: map[string]int64{}, committed: map[string]int64{},
		lifts:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()),
		liftCalls: map[string]*liftCall{},
		creates:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		recent:    map[string]map[string]recentPod{}, nodeLocks: map[string]*sync.Mutex{}, loaded: make(chan struct{}),
		stopped: map[string]map[string]bool{}, watched: map[string]watchedDomain{},
		stale: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	for _, o := range opts {
		o(g)
	}
	g.stopper = deleter{g.local}
	return g
}

// SetStopper sets what stops stale members (call before Run; the pod
// syncer, built after the Gate, is the agent's). The default deletes the
// local pod.
func (g *Gate) SetStopper(s Stopper) { g.stopper = s }

// Loaded is closed when Load has rebuilt the epochs.
func (g *Gate) Loaded() <-chan struct{} { return g.loaded }

// member returns the job key and epoch of a gang member's pod; ok is false
// for pods that are not gang members.
func member(p *corev1.Pod) (job string, epoch int64, ok bool) {
	v, has := p.Annotations[v1alpha1.AnnotationEpoch]
	if !has || p.Labels[v1alpha1.LabelJob] == "" {
		return "", 0, false
	}
	e, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return localNamespace(p) + "/" + p.Labels[v1alpha1.LabelJob], e, true
}

// localNamespace is the workload-cluster namespace of a member, from its
// hub pod or its local pod (both carry the queue): the queue's namespace, or
// the pod's own for a local pod made before queues had namespaces.
func localNamespace(p *corev1.Pod) string {
	if ns, ok := v1alpha1.LocalNamespaceOf(p.Annotations); ok {
		return ns
	}
	return p.Namespace
}

// observe records epoch for job and reports whether it is current. A newer
// epoch queues the job for the removal of older local members.
func (g *Gate) observe(job string, epoch int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if epoch < g.epochs[job] {
		return false
	}
	if epoch > g.epochs[job] {
		g.stale.Add(job)
	}
	g.epochs[job] = epoch
	return true
}

// isLoaded reports whether Load has ended.
func (g *Gate) isLoaded() bool {
	select {
	case <-g.loaded:
		return true
	default:
		return false
	}
}

// Mutate gates the local pod of a gang member before the pod syncer creates
// it (podsync.Gate). It only reads and writes memory. It refuses a stale
// epoch with ErrStaleEpoch.
func (g *Gate) Mutate(hub, local *corev1.Pod) error {
	job, epoch, ok := member(hub)
	if !ok {
		return nil
	}
	if !g.isLoaded() {
		return ErrNotLoaded
	}
	if !g.observe(job, epoch) {
		return fmt.Errorf("%w: pod %s/%s has epoch %d, job %s is at %d", ErrStaleEpoch, hub.Namespace, hub.Name,
			epoch, job, g.current(job))
	}
	if local.Labels == nil {
		local.Labels = map[string]string{}
	}
	if local.Annotations == nil {
		local.Annotations = map[string]string{}
	}
	local.Labels[v1alpha1.LabelJob] = hub.Labels[v1alpha1.LabelJob]
	local.Annotations[v1alpha1.AnnotationEpoch] = hub.Annotations[v1alpha1.AnnotationEpoch]
	local.Annotations[v1alpha1.AnnotationTargetNode] = hub.Annotations[v1alpha1.AnnotationTargetNode]
	if name, _, ok := g.sliceGroup(hub, epoch); ok {
		joinGroup(local, name)
	}
	g.useDomain(hub, local, epoch)
	if hub.Annotations[v1alpha1.AnnotationCommit] == hub.Annotations[v1alpha1.AnnotationEpoch] {
		// Committed already (an agent restart adopting it): no gate, and
		// its siblings here that still have theirs are lifted.
		if _, domain := hub.Annotations[v1alpha1.AnnotationComputeDomain]; !domain {
			g.commitSiblings(localNamespace(hub), job, hub.Labels[v1alpha1.LabelJob], epoch)
		}
		return nil
	}
	if g.committedEpoch(job) == epoch {
		return nil // a sibling's commit reached the agent
	}
	if hasGate(local) {
		return nil
	}
	local.Spec.SchedulingGates = append(local.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1alpha1.SchedulingGate})
	return nil
}

func (g *Gate) current(job string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epochs[job]
}

// Commit lifts the gate of the local pod of a committed hub pod
// (podsync.Gate, called with every newer hub pod). It blocks on one or a few
// workload cluster writes. Pods without a current commit are left alone.
func (g *Gate) Commit(ctx context.Context, hub *corev1.Pod) error {
	job, epoch, ok := member(hub)
	if !ok || hub.Annotations[v1alpha1.AnnotationCommit] != strconv.FormatInt(epoch, 10) {
		return nil
	}
	if !g.isLoaded() {
		return ErrNotLoaded
	}
	if !g.observe(job, epoch) {
		return fmt.Errorf("%w: commit of %s/%s for epoch %d", ErrStaleEpoch, hub.Namespace, hub.Name, epoch)
	}
	ns := localNamespace(hub)
	if name, size, ok := g.sliceGroup(hub, epoch); ok {
		if err := g.ensurePodGroup(ctx, ns, name, size, hub.Labels[v1alpha1.LabelJob], epoch); err != nil {
			return fmt.Errorf("commit %s/%s: %w", hub.Namespace, hub.Name, err)
		}
	}
	if k := (types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name}); g.isHeld(k) {
		// Held at its prepare (never a compute-domain member): created now.
		if err := g.createHeld(ctx, k); err != nil {
			return fmt.Errorf("commit %s/%s: %w", hub.Namespace, hub.Name, err)
		}
	} else {
		lifted, err := g.lift(ctx, ns, hub.Name, hub.Annotations[v1alpha1.AnnotationEpoch], epoch)
		if err != nil {
			return fmt.Errorf("commit %s/%s: %w", hub.Namespace, hub.Name, err)
		}
		if lifted {
			g.watchDomain(hub, epoch)
		}
	}
	if _, domain, _ := v1alpha1.MemberComputeDomainOf(hub.Annotations); !domain {
		g.commitSiblings(ns, job, hub.Labels[v1alpha1.LabelJob], epoch)
	}
	return nil
}

// siblingLifts is how many gates the lift queue lifts at once, all jobs
// together.
const siblingLifts = 16

// commitSiblings queues, the first time a commit of job's epoch reaches
// this agent, the lift of the gate of every local member of that epoch
// here, and records the epoch as committed: a member gated later (the
// cache had not shown it yet) is queued by its own event (Run). The hub
// stamps the commit on one member per cluster (its herald) only after it
// stored the commit of the whole gang (hub/dispatch), so one stamp commits
// them all: a 256-member gang's 256 stamps were each a write of the hub
// cluster and a sync of the hub pod here. The lifts run on the lift queue
// (the caller is a virtual-kubelet worker, which also creates the members
// of other gangs), siblingLifts at once, each retried with backoff until
// it is done or the member is gone or of another epoch. Members of a
// compute domain are left to their own stamps (each commit watches its
// clique's domain; the hub stamps each of them). It writes nothing: Mutate
// calls it too, for a stamped member adopted after a restart.
func (g *Gate) commitSiblings(ns, job, jobName string, epoch int64) {
	g.mu.Lock()
	first := g.committed[job] < epoch
	var held []types.NamespacedName
	if first {
		g.committed[job] = epoch
		held = g.heldOf(job, epoch)
	}
	g.mu.Unlock()
	if !first {
		return
	}
	for _, k := range held {
		g.creates.Add(k)
	}
	pods, err := g.cache.PodsOfJob(ns, jobName)
	if err != nil {
		return
	}
	for _, p := range pods {
		if g.liftDue(p) {
			g.lifts.Add(cache.MetaObjectToName(p))
		}
	}
}

// committedEpoch is the newest epoch of job whose commit reached this
// agent (0: none).
func (g *Gate) committedEpoch(job string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.committed[job]
}

// hasGate says whether a local pod still carries the gang's scheduling
// gate.
func hasGate(p *corev1.Pod) bool {
	for _, sg := range p.Spec.SchedulingGates {
		if sg.Name == v1alpha1.SchedulingGate {
			return true
		}
	}
	return false
}

// localPod returns a copy of a local pod: from the cache when cached is set
// and the cache has it (a commit then costs one write), else from the API
// (after a conflict the cache may lag).
func (g *Gate) localPod(ctx context.Context, ns, name string, cached bool) (*corev1.Pod, error) {
	if cached {
		if p, err := g.cache.Pods().Pods(ns).Get(name); err == nil {
			return p.DeepCopy(), nil
		}
	}
	return g.local.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}
