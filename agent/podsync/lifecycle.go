// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podsecurity"
)

// CreatePod creates the local pod of a hub pod bound to vnode, or adopts the
// one a previous agent run created. The local pod lives in the namespace of
// the hub pod's queue (localKey), created on demand at the queue's
// pod-security level; a hub pod that names no queue, or whose local pod
// would violate that level (checked again here with the upstream evaluator,
// whatever the hub checked at submit), is refused: reported Failed with the
// reason and never created. A hub pod whose local pod was deleted behind
// the agent's back is not recreated. The objects the local pod references
// are made to exist first (SetDependencies); a member they refuse is
// reported Prepared False and never created.
func (s *Syncer) CreatePod(ctx context.Context, vnode string, hub *corev1.Pod) error {
	began := time.Now()
	s.mu.Lock()
	lost := s.lost[hub.UID]
	s.mu.Unlock()
	if lost {
		return nil
	}
	lk, ok := localKey(hub)
	if !ok {
		s.reject(ctx, vnode, hub, v1alpha1.ReasonNoQueue, fmt.Sprintf(
			"the pod has no valid %s annotation, so it has no namespace in the workload cluster: only pods the Shoal hub dispatches are run",
			v1alpha1.AnnotationQueue))
		return nil
	}
	if lp, ok := s.LocalPodOf(hub); ok && lp.Namespace != lk.Namespace { // made by an earlier agent
		s.track(ctx, vnode, hub, lp, began)
		return nil
	}
	// The fence holds back new members until the agent has reached the
	// hub; a member whose local pod an earlier run made is adopted below
	// (Create finds it) all the same: refusing it made a restarted agent's
	// running gangs restart.
	if s.allowed != nil && !s.hasLocal(hub) {
		if err := s.allowed(); err != nil {
			return fmt.Errorf("create local pod %s: %w", lk, err)
		}
	}
	level := v1alpha1.PodSecurityOf(hub.Annotations)
	devices, hasDevices, err := memberDevices(hub)
	if err != nil && !s.hasLocal(hub) {
		s.reject(ctx, vnode, hub, v1alpha1.ReasonInvalidDevices, err.Error())
		return nil
	}
	lp := LocalPod(hub, vnode, lk.Namespace)
	if err := s.gate.Mutate(hub, lp); err != nil {
		return err
	}
	if msg := podsecurity.Violation(level, &lp.ObjectMeta, &lp.Spec); msg != "" && !s.hasLocal(hub) {
		s.reject(ctx, vnode, hub, v1alpha1.ReasonPodSecurity, fmt.Sprintf(
			"the member violates the pod-security level %q of queue %s and is not created: %s",
			level, hub.Annotations[v1alpha1.AnnotationQueue], msg))
		return nil
	}
	if err := s.ensureNamespace(ctx, lk.Namespace, hub.Annotations[v1alpha1.AnnotationQueue], level); err != nil {
		return err
	}
	if refused, err := s.ensureDeps(ctx, vnode, hub, lp); refused || err != nil {
		return err
	}
	done, hold := s.gate.PrepareCreate(ctx, hub, lp)
	if hold && s.hasLocal(hub) { // an earlier agent run made it: adopted below
		s.gate.Release(hub)
		hold = false
	}
	if hold {
		switch err := s.admitted(ctx, hub, lp); {
		case apierrors.IsAlreadyExists(err): // made meanwhile: adopted below
			s.gate.Release(hub)
		case err != nil:
			s.gate.Release(hub)
			return fmt.Errorf("create local pod %s: %w", lk, err)
		default:
			s.hold(ctx, vnode, hub, lp, began)
			return nil
		}
	}
	created, err := s.createLocal(ctx, hub, lp)
	done(created) // nil when it made none
	if err != nil {
		return err
	}
	if hasDevices {
		if err := s.ensureClaim(ctx, created, devices); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).V(2).Info("Local pod created", append(podKeys(hub), "local", klog.KObj(created), "virtualNode", vnode)...)
	metricCreated.Inc()
	s.track(ctx, vnode, hub, created, began)
	return nil
}

// createLocal creates local pod lp of hub, or returns the one of the same
// name an earlier agent run made for it.
func (s *Syncer) createLocal(ctx context.Context, hub, lp *corev1.Pod) (*corev1.Pod, error) {
	pods := s.local.CoreV1().Pods(lp.Namespace)
	created, err := pods.Create(ctx, lp, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = pods.Get(ctx, lp.Name, metav1.GetOptions{})
		if err == nil && created.Annotations[v1alpha1.AnnotationHubUID] != string(hub.UID) {
			return nil, errdefs.AsInvalidInput(fmt.Errorf("local pod %s/%s exists and belongs to another hub pod", lp.Namespace, lp.Name))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create local pod %s/%s: %w", lp.Namespace, lp.Name, err)
	}
	return created, nil
}

// refused says whether a create failed for good: the request itself was
// refused (rights, quota, admission, validation), not the API server's
// answer lost or delayed.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || errdefs.IsInvalidInput(err)
}

// refuseHeld reports held member k (entry e), whose create the workload
// cluster refused after the commit, Failed with the refusal, and never
// creates it: the hub restarts or ends the gang as for any member that
// failed.
func (s *Syncer) refuseHeld(ctx context.Context, k types.NamespacedName, e *entry, err error) {
	msg := fmt.Sprintf("the workload cluster refused the member's pod at its create after the commit: %v", err)
	s.mu.Lock()
	if s.pods[k] != e || e.deleting || e.lost {
		s.mu.Unlock()
		return
	}
	e.pending, e.lost = nil, true
	s.leaveReport(e)
	s.lost[e.hub.UID] = true
	e.status = failedStatus(e.status, v1alpha1.ReasonLocalCreateRefused, msg)
	view := e.show()
	s.mu.Unlock()
	klog.FromContext(ctx).Info("Held member refused at its create", append(podKeys(view), "err", err)...)
	if s.recorder != nil {
		s.recorder.Event(view, corev1.EventTypeWarning, v1alpha1.ReasonLocalCreateRefused, msg)
	}
	metricFailed.WithLabelValues(v1alpha1.ReasonLocalCreateRefused).Inc()
	s.sendShown(e)
}

// maxAdmitted bounds the admissions remembered (Syncer.admits): past it
// they are forgotten, and the next member of each job is dry-run again.
const maxAdmitted = 4096

// admitted asks the workload cluster, by a server-side dry-run create of
// the first member of each job's epoch the agent holds in a namespace,
// whether it would take the member's pod: its rights there (RBAC), the
// namespace's pod security and the cluster's admission webhooks refuse a
// held member now, before the hub can commit, as they refused the create
// of a gated member. A ResourceQuota counts only the pods created, so a
// quota the whole gang would exceed refuses members only at their create,
// after the commit (Syncer.CreateHeld).
func (s *Syncer) admitted(ctx context.Context, hub, lp *corev1.Pod) error {
	k := lp.Namespace + "/" + hub.Labels[v1alpha1.LabelJob] + "/" + hub.Annotations[v1alpha1.AnnotationEpoch]
	s.mu.Lock()
	ok := s.admits[k]
	s.mu.Unlock()
	if ok {
		return nil
	}
	// The members of a slice arrive together on several virtual-kubelet
	// workers: one dry-run answers them all (each was one more create
	// for the workload cluster's API server, 16 of a 128-member slice's).
	_, err, _ := s.admitting.Do(k, func() (any, error) {
		s.mu.Lock()
		done := s.admits[k] // a flight that ended since the read above
		s.mu.Unlock()
		if done {
			return nil, nil
		}
		if _, err := s.local.CoreV1().Pods(lp.Namespace).Create(ctx, lp, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.admits) >= maxAdmitted {
			clear(s.admits)
		}
		s.admits[k] = true
		return nil, nil
	})
	return err
}

// hold records a hub pod whose member the gate holds: prepared, its local
// pod lp created only at the commit (CreateHeld). The member is reported
// Prepared meanwhile by its epoch's report (joinReport), on the hub pod of
// one held member of the epoch in this cluster; its own hub pod stays
// Pending until its local pod's status moves it.
func (s *Syncer) hold(ctx context.Context, vnode string, hub, lp *corev1.Pod, began time.Time) {
	st := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: v1alpha1.PodConditionPrepared,
		Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonFits, LastTransitionTime: metav1.Now()}}}
	k := key(hub.Namespace, hub.Name)
	s.mu.Lock()
	e := &entry{vnode: vnode, hub: hub.DeepCopy(), status: st, shown: *hub.Status.DeepCopy(), pending: lp,
		trace: memberTrace{created: began}}
	if old := s.pods[k]; old != nil && old.hub.UID == hub.UID {
		e.trace = old.trace
		keepPrepared(&e.status, &old.status)
	}
	keepPrepared(&e.status, &e.shown)
	e.traceStatus(ctx, time.Now())
	s.pods[k] = e
	send := s.joinReport(k, e)
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Member prepared; its local pod is created at the commit", append(podKeys(hub), "virtualNode", vnode)...)
	if send != nil {
		s.sendShown(send)
	}
}

// CreateHeld creates, ungated, the local pod of a hub pod the gate held
// (agent/gang.Creator: its epoch is committed) and returns it; nil when
// the hub pod is no longer held (deleted, lost, or created already). A
// pod created while its hub pod's deletion began is deleted again.
func (s *Syncer) CreateHeld(ctx context.Context, hubNamespace, hubName string) (*corev1.Pod, error) {
	k := key(hubNamespace, hubName)
	s.mu.Lock()
	e := s.pods[k]
	if e == nil || e.pending == nil || e.deleting || e.lost {
		s.mu.Unlock()
		return nil, nil
	}
	lp, hub, vnode := e.pending.DeepCopy(), e.hub.DeepCopy(), e.vnode
	s.mu.Unlock()
	if s.allowed != nil { // the fence, as for any new member
		if err := s.allowed(); err != nil {
			return nil, fmt.Errorf("create local pod %s/%s: %w", lp.Namespace, lp.Name, err)
		}
	}
	began := time.Now()
	lp.Spec.SchedulingGates = slices.DeleteFunc(lp.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1alpha1.SchedulingGate
	})
	if len(lp.Spec.SchedulingGates) == 0 {
		lp.Spec.SchedulingGates = nil
	}
	created, err := s.createLocal(ctx, hub, lp)
	if refused(err) {
		s.refuseHeld(ctx, k, e, err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	gone := s.pods[k] != e || e.deleting || e.lost
	if !gone {
		e.pending = nil
		s.leaveReport(e)
		hub = e.hub.DeepCopy()
	}
	s.mu.Unlock()
	if gone {
		uid := created.UID
		err := s.local.CoreV1().Pods(created.Namespace).Delete(ctx, created.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete local pod %s/%s of a hub pod deleted meanwhile: %w", created.Namespace, created.Name, err)
		}
		return nil, nil
	}
	if devices, ok, err := memberDevices(hub); err == nil && ok {
		if err := s.ensureClaim(ctx, created, devices); err != nil {
			return nil, err
		}
	}
	klog.FromContext(ctx).V(2).Info("Local pod created at the commit", append(podKeys(hub), "local", klog.KObj(created), "virtualNode", vnode)...)
	metricCreated.Inc()
	s.track(ctx, vnode, hub, created, began)
	return created, nil
}

// track records a hub pod and pushes the local pod's current status; began
// is when the agent began to create (or adopt) the local pod.
func (s *Syncer) track(ctx context.Context, vnode string, hub, local *corev1.Pod, began time.Time) {
	s.mu.Lock()
	// The local pod may have changed before this entry existed (the gang
	// gate can prepare it while Create returns): localChanged dropped that
	// event and no other may follow, so the member would never be reported
	// Prepared. The cache holds that change; it is read under s.mu, so a
	// later event still overwrites it.
	if lp, ok := s.localPod(local.Namespace, local.Name); ok && lp.UID == local.UID {
		local = lp
	}
	e := &entry{vnode: vnode, hub: hub.DeepCopy(), status: localStatus(local), shown: *hub.Status.DeepCopy(),
		trace: memberTrace{created: began}}
	if old := s.pods[key(hub.Namespace, hub.Name)]; old != nil && old.hub.UID == hub.UID {
		// What the agent sent last (a held member's Prepared), which the
		// hub pod read may not show yet.
		e.trace, e.shown = old.trace, old.shown
		keepPrepared(&e.status, &old.status)
	}
	keepPrepared(&e.status, &e.shown)
	e.traceStatus(ctx, time.Now())
	s.pods[key(hub.Namespace, hub.Name)] = e
	if !hubMoved(&e.shown, &e.status) {
		// A new local pod (Pending, as its hub pod) or one adopted after
		// a restart whose status the hub pod shows already.
		s.mu.Unlock()
		return
	}
	e.show()
	s.mu.Unlock()
	s.sendShown(e)
}

// UpdatePod records the newer hub pod (and adopts a local pod after a restart).
// Changes that Kubernetes allows on a running pod are not yet propagated.
func (s *Syncer) UpdatePod(ctx context.Context, vnode string, hub *corev1.Pod) error {
	s.mu.Lock()
	e := s.pods[key(hub.Namespace, hub.Name)]
	lost := false
	if e != nil {
		e.hub = hub.DeepCopy()
		lost = e.lost
	}
	s.mu.Unlock()
	if e == nil {
		return s.CreatePod(ctx, vnode, hub)
	}
	if lost { // no local pod to commit: it was deleted or stopped
		return nil
	}
	began := time.Now()
	if err := s.gate.Commit(ctx, hub); err != nil {
		return err
	}
	s.mu.Lock()
	e.traceCommit(ctx, began, time.Now())
	s.mu.Unlock()
	return nil
}

// DeletePod deletes the local pod with the hub pod's grace period. When the
// local pod is gone its terminal status is pushed, so that virtual-kubelet
// removes the hub pod.
func (s *Syncer) DeletePod(ctx context.Context, hub *corev1.Pod) error {
	k := key(hub.Namespace, hub.Name)
	s.mu.Lock()
	e := s.pods[k]
	if e == nil {
		e = &entry{vnode: hub.Spec.NodeName, hub: hub.DeepCopy()}
		s.pods[k] = e
	}
	e.deleting = true
	lost := e.lost
	if e.pending != nil {
		e.pending = nil
		s.leaveReport(e)
	}
	s.mu.Unlock()
	s.gate.Release(hub)
	if s.deps != nil {
		s.deps.Release(hub)
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: hub.DeletionGracePeriodSeconds}
	if uid := s.localUID(hub); uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := errNoLocal
	lk, ok := localKey(hub)
	if lp, found := s.LocalPodOf(hub); found { // where it is (an earlier agent's: the hub pod's namespace)
		lk, ok = key(lp.Namespace, lp.Name), true
	}
	if ok { // a pod that names no queue never had a local pod
		err = s.local.CoreV1().Pods(lk.Namespace).Delete(ctx, lk.Name, opts)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && err != errNoLocal {
		return fmt.Errorf("delete local pod of %s/%s: %w", hub.Namespace, hub.Name, err)
	}
	metricDeleted.Inc()
	if err != nil || lost { // already gone: report the end now
		s.mu.Lock()
		delete(s.pods, k)
		e.status = deletedStatus(e.status)
		e.show()
		s.mu.Unlock()
		s.sendShown(e)
	}
	return nil
}

// localUID returns the UID of the local pod of hub, from the cache.
func (s *Syncer) localUID(hub *corev1.Pod) types.UID {
	lp, ok := s.LocalPodOf(hub)
	if !ok {
		return ""
	}
	return lp.UID
}

// errNoLocal stands for the delete of a local pod that never existed.
var errNoLocal = errors.New("no local pod")

// GetPod returns the hub pod as the provider sees it, or NotFound.
func (s *Syncer) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	s.mu.Lock()
	e := s.pods[key(ns, name)]
	var view *corev1.Pod
	if e != nil {
		view = e.hubView()
	}
	s.mu.Unlock()
	if view != nil {
		return view, nil
	}
	if lp, ok := s.localPodOfHub(ns, name); ok {
		return fromLocal(lp), nil
	}
	return nil, errdefs.NotFoundf("pod %s/%s is not known to the agent", ns, name)
}

// GetPodStatus returns the pod's status as the provider sees it.
func (s *Syncer) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	p, err := s.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &p.Status, nil
}

// GetPods returns the pods of vnode: those tracked and the managed local
// pods annotated with it (so that pods left over from an earlier run whose
// hub pod is gone are deleted at start).
func (s *Syncer) GetPods(_ context.Context, vnode string) ([]*corev1.Pod, error) {
	seen := map[string]bool{}
	var out []*corev1.Pod
	s.mu.Lock()
	for k, e := range s.pods {
		if e.vnode == vnode {
			out = append(out, e.hubView())
			seen[k.String()] = true
		}
	}
	s.mu.Unlock()
	locals, err := s.cache.PodsOfVirtualNode(vnode)
	if err != nil {
		return nil, err
	}
	for _, lp := range locals {
		if !seen[hubKeyOf(lp).String()] {
			out = append(out, fromLocal(lp))
		}
	}
	return out, nil
}
