// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// entry is what the syncer knows of one hub pod.
type entry struct {
	vnode    string
	hub      *corev1.Pod
	deleting bool
	lost     bool // the local pod was deleted behind the agent's back
	status   corev1.PodStatus
	// shown is the status the hub pod shows (what the agent last sent, or
	// the hub pod's own before that): a local change that leaves it as it
	// is for the hub (hubMoved) sends nothing.
	shown corev1.PodStatus
	// held, while set, writes the start progress the hub pod does not show
	// yet when it fires (startHold); any status sent stops it.
	held *held
	// pending is the local pod of a member the gate holds (prepared, to
	// be created at its commit: CreateHeld); nil once created, or for a
	// pod created at once.
	pending *corev1.Pod
	trace   memberTrace
	// view is the hub view show returned last, the seq-th; sendShown hands
	// it on (sendMu held; sentSeq: the last one handed on).
	view    *corev1.Pod
	seq     uint64
	sendMu  sync.Mutex
	sentSeq uint64
}

// Syncer mirrors hub pods into the local cluster. One Syncer serves all the
// agent's virtual nodes; each registers its status callback with Notify.
type Syncer struct {
	cache    *cluster.Cache
	local    kubernetes.Interface
	localCfg *rest.Config
	gate     Gate
	recorder record.EventRecorder
	// allowed, when set, may refuse member creates (the agent's fence).
	allowed func() error
	// deps, when set, provides the objects local pods reference.
	deps Dependencies

	mu      sync.Mutex
	pods    map[types.NamespacedName]*entry
	lost    map[types.UID]bool
	notify  map[string]func(*corev1.Pod)
	nsReady map[string]nsState
	// admits are the jobs' epochs whose members the workload cluster
	// admitted (admitted), by "<namespace>/<job>/<epoch>".
	admits map[string]bool
	// admitting shares one dry-run among the members of a job's epoch
	// that ask at once (admitted).
	admitting singleflight.Group
	// reports are the reports of held members, by job epoch (report.go).
	reports map[reportKey]*report
	// self is the agent's RBAC subject in the workload cluster
	// (SetMemberSubject).
	self   *rbacv1.Subject
	synced chan struct{}
	// startHold is how long start progress waits (the constant; shorter in
	// tests).
	startHold time.Duration
}

// New returns a Syncer for the workload cluster c caches. gate (nil for
// none) is asked before each create and with each newer hub pod; recorder
// records events on hub pods; localCfg is used for exec.
func New(c *cluster.Cache, localCfg *rest.Config, gate Gate, recorder record.EventRecorder) *Syncer {
	if gate == nil {
		gate = noGate{}
	}
	return &Syncer{cache: c, local: c.Client(), localCfg: localCfg, gate: gate, recorder: recorder,
		pods: map[types.NamespacedName]*entry{}, lost: map[types.UID]bool{}, notify: map[string]func(*corev1.Pod){},
		nsReady: map[string]nsState{}, admits: map[string]bool{}, reports: map[reportKey]*report{}, synced: make(chan struct{}), startHold: startHold}
}

// SetRecorder sets the recorder of events on hub pods (call before Run; the
// virtual nodes, which are built after the syncer, own the recorder).
func (s *Syncer) SetRecorder(r record.EventRecorder) { s.recorder = r }

// SetCreateCheck sets a check asked before every local pod is created; an
// error refuses the create, and virtual-kubelet retries it with backoff
// (call before Run; the agent's fence, agent/fence.Fence.Allowed).
func (s *Syncer) SetCreateCheck(allowed func() error) { s.allowed = allowed }

// Notify registers the status callback of a virtual node.
func (s *Syncer) Notify(vnode string, cb func(*corev1.Pod)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify[vnode] = cb
}

// Synced is closed when the local pod cache is filled and the syncer has
// seen every managed local pod in it.
func (s *Syncer) Synced() <-chan struct{} { return s.synced }

// Run follows the managed local pods in the shared cache until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	reg, err := s.cache.AddPodHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(o any) bool {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			p, ok := o.(*corev1.Pod)
			return ok && managed(p)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.localChanged(ctx, o) },
			UpdateFunc: func(_, o any) { s.localChanged(ctx, o) },
			DeleteFunc: func(o any) { s.localDeleted(ctx, o) },
		},
	})
	if err != nil {
		return err
	}
	if !s.cache.WaitForCacheSync(ctx, reg) {
		return ctx.Err()
	}
	close(s.synced)
	<-ctx.Done()
	return nil
}

// managed reports whether a local pod is one the agent created.
func managed(p *corev1.Pod) bool { return p.Labels[v1alpha1.LabelManaged] == "true" }

// localPod returns the managed local pod ns/name from the cache.
func (s *Syncer) localPod(ns, name string) (*corev1.Pod, bool) {
	lp, err := s.cache.Pods().Pods(ns).Get(name)
	if err != nil || !managed(lp) {
		return nil, false
	}
	return lp, true
}

// hubUID is the UID of the hub pod of local pod lp.
func hubUID(lp *corev1.Pod) string { return lp.Annotations[v1alpha1.AnnotationHubUID] }

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// hubView returns the hub pod with the status the provider reports.
func (e *entry) hubView() *corev1.Pod {
	p := e.hub.DeepCopy()
	p.Status = *e.status.DeepCopy()
	dropLocalClaims(&p.Status)
	return p
}

// show returns hubView and records its status as the one the hub pod
// shows. Called with s.mu held, before the view is sent.
func (e *entry) show() *corev1.Pod {
	if e.held != nil {
		e.held.timer.Stop()
		e.held = nil
	}
	p := e.hubView()
	e.shown = *p.Status.DeepCopy()
	e.view = p
	e.seq++
	return p
}

// sendShown hands the view entry e showed last to its virtual node, unless
// a call that began later handed it on already, so that a member's views
// reach virtual-kubelet, which keeps the last one it is given, in the
// order they were shown: the held start progress (writeHeld, on its
// timer's goroutine) and a newer status sent at once (on the cache's)
// could otherwise cross, and the older one overwrite the newer (a hub pod
// stayed Pending under its Running local pod). Called without s.mu.
func (s *Syncer) sendShown(e *entry) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	s.mu.Lock()
	view, seq, cb := e.view, e.seq, s.notify[e.vnode]
	s.mu.Unlock()
	if seq == e.sentSeq {
		return
	}
	e.sentSeq = seq
	if cb != nil {
		cb(view)
	}
}

func (s *Syncer) localChanged(ctx context.Context, o any) {
	lp, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	e := s.pods[hubKeyOf(lp)]
	if e == nil || e.lost || string(e.hub.UID) != lp.Annotations[v1alpha1.AnnotationHubUID] {
		s.mu.Unlock()
		return
	}
	st := localStatus(lp)
	keepPrepared(&st, &e.status)
	if equality.Semantic.DeepEqual(e.status, st) {
		// Its spec or metadata changed (the gate lifted, an annotation).
		s.mu.Unlock()
		return
	}
	e.status = st
	e.traceStatus(ctx, time.Now())
	if !hubMoved(&e.shown, &e.status) {
		// Only the local scheduler's progress (hubMoved): the hub pod's
		// status stands; the next change that matters carries it.
		s.mu.Unlock()
		return
	}
	if starting(&e.shown, &e.status) {
		// The kubelet starting it: written after startHold unless a
		// newer status that matters (Running) is sent first.
		if e.held == nil {
			k, h := hubKeyOf(lp), &held{}
			h.timer = time.AfterFunc(s.startHold, func() { s.writeHeld(k, e, h) })
			e.held = h
		}
		s.mu.Unlock()
		return
	}
	e.show()
	s.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("Local pod changed", append(podKeys(lp), "phase", lp.Status.Phase)...)
	s.sendShown(e)
}

// held is a status write put off (entry.held).
type held struct{ timer *time.Timer }

// writeHeld sends, when h fires, the start progress of entry e (at
// key k) that the hub pod does not show yet, unless e was replaced or a
// status was sent since (which stopped h).
func (s *Syncer) writeHeld(k types.NamespacedName, e *entry, h *held) {
	s.mu.Lock()
	if s.pods[k] != e || e.held != h || !hubMoved(&e.shown, &e.status) {
		s.mu.Unlock()
		return
	}
	e.show()
	s.mu.Unlock()
	s.sendShown(e)
}

func (s *Syncer) localDeleted(ctx context.Context, o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	lp, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	k := hubKeyOf(lp)
	e := s.pods[k]
	if e == nil || string(e.hub.UID) != lp.Annotations[v1alpha1.AnnotationHubUID] {
		s.mu.Unlock()
		return
	}
	if e.deleting {
		delete(s.pods, k)
		last := lp.Status
		if e.lost { // stopped by the agent (Fail): keep the reported failure
			last = e.status
		}
		e.status = deletedStatus(last)
		e.show()
		s.mu.Unlock()
		s.sendShown(e)
		return
	}
	if e.lost { // stopped by the agent (Fail), which reported it already
		s.mu.Unlock()
		return
	}
	e.lost = true
	s.lost[e.hub.UID] = true
	e.status = lostStatus(lp.Status)
	view := e.show()
	s.mu.Unlock()
	klog.FromContext(ctx).Info("Local pod deleted behind the agent's back; reporting, not recreating", podKeys(lp)...)
	metricLost.Inc()
	if s.recorder != nil {
		s.recorder.Event(view, corev1.EventTypeWarning, v1alpha1.ReasonLocalPodDeleted,
			fmt.Sprintf("the pod was deleted in the workload cluster (node %s); it is not recreated", lp.Spec.NodeName))
	}
	s.sendShown(e)
}
