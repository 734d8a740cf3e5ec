// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// parallelism bounds concurrent hub API calls for one gang.
const parallelism = 32

// act carries out what the phases decided, once the decision is stored.
// wrote says whether this pass already wrote the job.
func (d *Dispatcher) act(ctx context.Context, s *scope, wrote bool) error {
	if err := d.deletePods(ctx, s.old, 0, s.heard); err != nil {
		return err
	}
	if rendezvousDue(s) {
		if err := d.syncRendezvous(ctx, s); err != nil {
			return err
		}
		if err := d.syncCopies(ctx, s); err != nil {
			return err
		}
	}
	if s.create {
		if err := d.createMembers(ctx, s); err != nil {
			return err
		}
	}
	if s.stamp {
		if err := d.stamp(ctx, s); err != nil {
			return err
		}
	}
	if s.teardown != nil {
		return d.tearDown(ctx, s, wrote)
	}
	return nil
}

// rendezvousDue says whether the pass keeps the job's rendezvous Service
// and EndpointSlices: while its current epoch is dispatched and not being
// torn down (s.pods then holds that epoch's members).
func rendezvousDue(s *scope) bool {
	j := s.job.Object
	return s.teardown == nil && !s.waiting && s.res != nil && j != nil && !j.Status.Phase.Terminal() && s.res.Epoch == j.Status.Epoch
}

// missingMembers says whether a member of the reservation's epoch has no
// pod in s.pods.
func missingMembers(s *scope) bool {
	have := make(map[string]bool, len(s.pods))
	for _, p := range s.pods {
		have[p.Name] = true
	}
	for _, m := range s.res.Members {
		if !have[v1alpha1.MemberPodName(s.name, s.res.Epoch, m.Index)] {
			return true
		}
	}
	return false
}

// createMembers creates the missing member pods and adds them to s.pods.
func (d *Dispatcher) createMembers(ctx context.Context, s *scope) error {
	j := s.job.Object
	have := map[string]bool{}
	for _, p := range s.pods {
		have[p.Name] = true
	}
	var missing []*corev1.Pod
	var level v1alpha1.PodSecurityLevel // the queue's, read once a member is missing
	for _, m := range s.res.Members {
		if !have[v1alpha1.MemberPodName(j.Name, s.res.Epoch, m.Index)] {
			if level == "" {
				l, _, err := queues.PodSecurity(ctx, d.queues, j.Spec.Queue)
				if err != nil {
					return err
				}
				level = l
			}
			missing = append(missing, d.memberPod(j, s.res, m, level))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := d.leading(ctx); err != nil {
		return err
	}
	if err := d.ensureNamespaces(ctx, clusterNamespaces(s.res)); err != nil {
		return err
	}
	created := make([]*corev1.Pod, len(missing))
	err := forEach(len(missing), func(i int) error {
		api := d.hub.CoreV1().Pods(missing[i].Namespace)
		p, err := api.Create(ctx, missing[i], metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // the cache had not seen it yet
			p, err = api.Get(ctx, missing[i].Name, metav1.GetOptions{})
		}
		created[i] = p
		if err == nil {
			d.pods.own.wrote(j.Name, p)
		}
		return err
	})
	for _, p := range created {
		if p != nil {
			s.pods = append(s.pods, p)
		}
	}
	return err
}

// stamp puts the commit annotation on the members that carry the commit
// to their cluster (toStamp) and lack it.
func (d *Dispatcher) stamp(ctx context.Context, s *scope) error {
	epoch := strconv.FormatInt(s.res.Epoch, 10)
	todo, later := toStamp(s.pods, epoch, s.committed, s.now)
	if !later.IsZero() {
		s.wakeAt(later)
	}
	if len(todo) == 0 {
		return nil
	}
	if err := d.leading(ctx); err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationCommit, epoch))
	err := forEach(len(todo), func(i int) error {
		p, err := d.hub.CoreV1().Pods(todo[i].Namespace).Patch(ctx, todo[i].Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if isNotFound(err) {
			return nil // a vanished member fails the gang in follow
		}
		if err == nil {
			d.pods.own.wrote(s.name, p)
		}
		return err
	})
	if err == nil {
		traceCommit(ctx, s, len(todo))
	}
	return err
}

// stragglersAfter is how long after the commit a member that is not
// running yet gets its own commit stamp (toStamp).
const stragglersAfter = 10 * time.Second

// toStamp returns the members of pods (the epoch's) that get the commit
// stamp now: each cluster's herald (its member of the lowest index: the
// agent lifts the gates of all the job's members there on one stamp,
// agent/gang), every member of a compute domain (each commit watches its
// clique's domain), and, from stragglersAfter after the commit (committed;
// zero: unknown, at once), every member that does not run yet: that is
// how an agent of the release before this one, which lifts a member's
// gate only on its own stamp when a lift fails, still starts the gang.
// A 256-member gang over two clusters took 256 stamps, each a write of the
// hub cluster and a sync of its pod by virtual-kubelet; it now takes two.
// later is when the stragglers are due (zero: none waits for it).
func toStamp(pods []*corev1.Pod, epoch string, committed, now time.Time) (todo []*corev1.Pod, later time.Time) {
	herald := map[string]*corev1.Pod{}
	for _, p := range pods {
		c := p.Labels[v1alpha1.LabelCluster]
		if h := herald[c]; h == nil || memberIndex(p) < memberIndex(h) {
			herald[c] = p
		}
	}
	due := committed.Add(stragglersAfter)
	for _, p := range pods {
		if p.Annotations[v1alpha1.AnnotationCommit] == epoch || p.DeletionTimestamp != nil {
			continue
		}
		_, domain := p.Annotations[v1alpha1.AnnotationComputeDomain]
		st, _ := stateOf(p)
		waiting := st != memberRunning && st != memberSucceeded && st != memberFailed
		switch {
		case herald[p.Labels[v1alpha1.LabelCluster]] == p, domain:
			todo = append(todo, p)
		case waiting && !now.Before(due):
			todo = append(todo, p)
		case waiting:
			later = due
		}
	}
	return todo, later
}

// memberIndex is a member pod's index in its gang (-1 when unreadable).
func memberIndex(p *corev1.Pod) int {
	i, err := strconv.Atoi(p.Labels[v1alpha1.LabelMember])
	if err != nil {
		return -1
	}
	return i
}

// tearDown deletes every member with the teardown's grace (those on Lost
// clusters at once: forceDelete); once none is
// left it releases the reservation and, in the same transaction, applies
// the job's transition. When this pass already wrote the job the release
// waits for the next pass.
func (d *Dispatcher) tearDown(ctx context.Context, s *scope, wrote bool) error {
	pods := s.pods
	if s.teardown.keepFinished {
		pods = unfinished(pods)
	}
	if len(pods) > 0 {
		onLost, rest := s.lost.split(pods, s.runPolicy())
		return errors.Join(d.forceDelete(ctx, onLost), d.deletePods(ctx, rest, s.teardown.grace, s.heard))
	}
	if wrote {
		return nil
	}
	var epoch int64
	if s.res != nil {
		epoch = s.res.Epoch
	}
	if live, err := d.pods.anyLive(ctx, s.name, epoch, s.teardown.keepFinished); err != nil || live {
		return err
	}
	conds := d.guards()
	var ops []store.Op
	if s.res != nil {
		c, o := d.ledger.ReleaseGuarded(s.name, s.resRev)
		conds, ops = append(conds, c), append(ops, o)
	}
	if s.job.Object != nil && s.teardown.finish != nil {
		c, o, _, err := d.status.Ops(s.job, *s.teardown.finish)
		if err != nil {
			return err
		}
		conds, ops = append(conds, c), append(ops, o)
	}
	if len(ops) == 0 {
		return nil
	}
	if _, err := d.st.Txn(ctx).If(conds...).Then(ops...).Commit(); err != nil {
		return err
	}
	return d.deleteRendezvous(ctx, s.name)
}

// unfinished drops the members that ended (Succeeded or Failed).
func unfinished(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// deletePods deletes the pods not yet terminating with grace seconds (at
// least minMemberGrace, so that their agent confirms their end), deletes
// again those terminating with a longer grace (cut short: the virtual
// kubelet passes the shorter one on to the agent and the kubelet), and
// force-deletes those hanging past grace plus ForceDeleteAfter whose
// cluster's agent has reached the hub since (fencewait.go); the others
// wait for their cluster to turn Lost.
func (d *Dispatcher) deletePods(ctx context.Context, pods []*corev1.Pod, grace int64, h heard) error {
	now := d.cfg.Clock.Now()
	var errs []error
	for _, p := range pods {
		g := max(grace, minMemberGrace)
		if p.DeletionTimestamp != nil {
			shorter := p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds > g
			limit := p.DeletionTimestamp.Add(d.cfg.ForceDeleteAfter)
			switch {
			case shorter: // the grace was cut (a preempted job's checkpoint): delete again with it
			case now.Before(limit) || !h.sinceDeletion(p):
				continue
			default:
				g = 0
			}
		}
		err := d.hub.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &g})
		if err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(pods) > 0 {
		klog.FromContext(ctx).V(2).Info("deleting members", "pods", len(pods), "grace", grace)
	}
	return errors.Join(errs...)
}

// forEach runs fn for 0..n-1 with bounded parallelism and joins the errors.
func forEach(n int, fn func(int) error) error { return forEachN(n, parallelism, fn) }

// forEachN runs fn for 0..n-1, width at a time, and joins the errors.
func forEachN(n, width int, fn func(int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, max(width, 1))
	)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func isNotFound(err error) bool { return err != nil && apierrors.IsNotFound(err) }
