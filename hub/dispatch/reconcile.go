// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// scope is one job's pass: what was read, and what the phases decided. The
// phases only decide; status.go writes the job once, then act.go carries the
// decisions out, in that order, so every decision is stored before it is
// acted on.
type scope struct {
	name   string
	job    store.Item[*v1alpha1.Job] // Object nil: the job is gone
	res    *ledger.Reservation
	resRev int64
	pods   []*corev1.Pod // members of the reservation's epoch (all of them before observe)
	old    []*corev1.Pod // members of other epochs
	now    time.Time
	// drains are the clusters with a drain, and lost those Lost or
	// NotReady, read once per pass.
	drains drains
	lost   lostClusters
	// heard is every cluster's link to the hub cluster, read with them: a
	// hanging member is force-deleted only when its agent reached the hub
	// cluster since, or has fenced itself (fencewait.go).
	heard heard

	// decision is a new two-phase decision to record.
	decision *jobs.Decision
	// aggregate folds the member phases into the job; started is set when
	// every member runs for the first time, finished when every member
	// succeeded. An aggregate that is neither changes only the member
	// phases: Lead writes those at most every memberStatusEvery (status.go).
	aggregate, started, finished bool
	// create and stamp create the missing members and stamp the commit.
	create, stamp bool
	// committed is when the epoch was committed (stamp; zero: unknown).
	committed time.Time
	// teardown, when set, deletes every member and then releases the
	// reservation together with its job transition.
	teardown *teardown
	// wake is a deadline a phase is waiting for (zero: none); Run passes
	// again then.
	wake time.Time
	// waiting is set when the gang was refused room to start preparing
	// (admit.go): it keeps its reservation and nothing is done for it.
	waiting bool
}

// teardown is a decided end of an epoch.
type teardown struct {
	// grace is the members' deletion grace period in seconds.
	grace int64
	// finish is the job's transition with the release (nil: none).
	finish *jobs.Transition
	// keepFinished leaves the members that ended (Succeeded or Failed) in
	// place, so their logs stay readable from the hub; the reservation is
	// released once the others are gone.
	keepFinished bool
}

// phase is one step of a job's reconcile; done ends the pass's phases.
type phase func(s *scope) (done bool)

// Pass reconciles every job that holds a reservation or has member pods,
// Config.Workers jobs at a time, and keeps the earliest deadline still
// pending (a start deadline) for Run to pass again at. Run does not call
// it: it sweeps (sweep) and its workers reconcile the jobs it queues, and
// the jobs that change (queue.go).
func (d *Dispatcher) Pass(ctx context.Context) error {
	d.wake = time.Time{}
	if err := d.pods.wait(ctx); err != nil {
		return err
	}
	scopes, err := d.sweep(ctx)
	if scopes == nil {
		return err
	}
	errs := []error{err}
	var mu sync.Mutex
	dr, lost, beats := d.view.get()
	_ = forEachN(len(scopes), d.cfg.Workers, func(i int) error {
		s := scopes[i]
		s.drains, s.lost, s.heard = dr, lost, beats
		err := d.reconcile(ctx, s)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && !errors.Is(err, store.ErrConflict) {
			errs = append(errs, fmt.Errorf("job %s: %w", s.name, err))
		}
		if !s.wake.IsZero() && (d.wake.IsZero() || s.wake.Before(d.wake)) {
			d.wake = s.wake
		}
		return nil
	})
	return errors.Join(errs...)
}

// sweep reads the clusters into the view the reconciles read, gathers the
// jobs to reconcile and removes the rendezvous objects and dependency
// copies of jobs that have neither a reservation nor members. It returns
// nil scopes when it could not gather them; its error joins the sweeps'.
func (d *Dispatcher) sweep(ctx context.Context) ([]*scope, error) {
	dr, lost, beats, err := d.readClusters(ctx)
	if err != nil {
		return nil, err
	}
	d.view.set(dr, lost, beats)
	scopes, err := d.gather(ctx)
	if err != nil {
		return nil, err
	}
	gathered := make(map[string]bool, len(scopes))
	for _, s := range scopes {
		gathered[s.name] = true
	}
	// A job reserved since the gather (a worker may be dispatching it) is
	// read again before anything of it is removed.
	live := func(job string) bool {
		if gathered[job] {
			return true
		}
		s, err := d.scopeOf(ctx, job)
		return err != nil || s != nil
	}
	return scopes, errors.Join(d.sweepRendezvous(ctx, live), d.sweepCopies(ctx, live))
}

// reconcile drives one job one step: read, decide in phases, write the
// status once, act.
func (d *Dispatcher) reconcile(ctx context.Context, s *scope) error {
	ctx = withJob(ctx, s)
	j, rev, err := d.jobs.Get(ctx, s.name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	s.job, s.now = store.Item[*v1alpha1.Job]{Name: s.name, Object: j, Revision: rev}, d.cfg.Clock.Now()
	for _, p := range []phase{d.observe, d.preemption, d.clusterLoss, d.drain, d.reclaim, d.decide, d.prepare, d.follow, d.finish} {
		if p(s) {
			break
		}
	}
	wrote, err := d.writeStatus(ctx, s)
	if err != nil {
		return err
	}
	d.admit.done(s.name, preparingNow(s), s.waiting)
	if terminating(s.pods) || terminating(s.old) {
		// A hanging member is force-deleted once its agent is heard from
		// (deletePods): look again after the next sweep read the clusters.
		s.wakeAt(s.now.Add(d.cfg.Interval))
	}
	return d.act(ctx, s, wrote)
}

// terminating says whether a pod of pods is being deleted.
func terminating(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

// gather joins the reservations and the cached member pods by job.
func (d *Dispatcher) gather(ctx context.Context) ([]*scope, error) {
	byJob := map[string]*scope{}
	get := func(name string) *scope {
		if byJob[name] == nil {
			byJob[name] = &scope{name: name}
		}
		return byJob[name]
	}
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := d.ledger.Reservations().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		for _, it := range res.Items {
			s := get(it.Name)
			s.res, s.resRev = it.Object, it.Revision
		}
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	pods, err := d.pods.byJob()
	if err != nil {
		return nil, err
	}
	for job, ps := range pods {
		get(job).pods = ps
	}
	out := make([]*scope, 0, len(byJob))
	for _, s := range byJob {
		sort.Slice(s.pods, func(i, j int) bool { return s.pods[i].Name < s.pods[j].Name })
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// observe ends a gone or finished job's epoch, removes leftovers of old
// epochs and waits for the scheduler's consistent write of job and
// reservation.
func (d *Dispatcher) observe(s *scope) bool {
	j := s.job.Object
	switch {
	case j == nil:
		s.teardown = &teardown{}
		traceEnded(s)
		return true
	case j.Status.Phase.Terminal():
		traceEnded(s)
		// A finished job keeps its ended members for FinishedRetention
		// after it finished (their logs), then they go too.
		s.teardown = &teardown{keepFinished: true}
		if j.Status.CompletionTime != nil {
			until := j.Status.CompletionTime.Add(d.cfg.FinishedRetention)
			if s.now.Before(until) {
				s.wake = until
			} else {
				s.teardown.keepFinished = false
			}
		}
		return true
	case s.res == nil:
		s.old, s.pods = s.pods, nil // leftovers of an old epoch
		return true
	case s.res.Epoch != j.Status.Epoch:
		return true // the scheduler writes both at once; wait for a consistent read
	}
	var cur []*corev1.Pod
	for _, p := range s.pods {
		if epochOf(p) == s.res.Epoch {
			cur = append(cur, p)
		} else {
			s.old = append(s.old, p)
		}
	}
	s.pods = cur
	return false
}

// preemption stops a preempted job's members with its grace period and
// requeues it. Once the job reports a checkpoint taken after the
// preemption notice its grace ends: the members are stopped at once (the
// shortest member grace) and the job resumes from that checkpoint.
func (d *Dispatcher) preemption(s *scope) bool {
	j := s.job.Object
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPreempted)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false
	}
	g, msg := grace(j), c.Message
	if j.Status.CheckpointAfter(c.LastTransitionTime.Time) {
		if at := graceCutAt(s.pods, s.now); s.now.Before(at) {
			s.wake = at
		} else {
			g = 0
			msg = fmt.Sprintf("%s; checkpoint step %d taken after the notice ended the grace", msg, j.Status.Checkpoint.Step)
		}
	}
	s.teardown = &teardown{grace: g, finish: d.requeue("Preempted", msg, false, s.now)}
	return true
}

// graceCutDelay is how long after its deletion began a member's grace may
// be cut short, so that the workload cluster's kubelet has started its
// first kill and can shorten it. A precaution only: kubelet v1.37.2 with
// containerd was seen not to shorten a kill in progress at all in some runs
// (docs/checkpoints.md); a job that exits once saved ends its grace itself.
const graceCutDelay = 3 * time.Second

// graceCutAt is when the members' grace may be cut: graceCutDelay after the
// last of them began terminating (now plus the delay for one not yet
// deleted).
func graceCutAt(pods []*corev1.Pod, now time.Time) time.Time {
	at := time.Time{}
	for _, p := range pods {
		start := now
		if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
			start = p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		}
		if t := start.Add(graceCutDelay); t.After(at) {
			at = t
		}
	}
	return at
}

// decide starts the epoch's dispatch, when there is room for its members
// to prepare (admit.go): the Preparing decision, then the members are
// created.
func (d *Dispatcher) decide(s *scope) bool {
	if current(s) != nil {
		return false
	}
	if !d.admit.admit(s.name, len(s.res.Members)) {
		s.waiting = true
		return true
	}
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchPreparing, "",
		fmt.Sprintf("preparing %d members of epoch %d on %v", len(s.res.Members), s.res.Epoch, s.res.Clusters))}
	s.create = true
	return true
}

// prepare is phase one: create the missing members and wait for every
// agent's Prepared; commit when all are, abort when one cannot or the
// deadline passes.
func (d *Dispatcher) prepare(s *scope) bool {
	disp := current(s)
	if disp.Phase != v1alpha1.DispatchPreparing {
		return false
	}
	s.create = true
	var prepared int
	reported := reportedPrepared(s.pods)
	for _, p := range s.pods {
		switch st, msg := stateWith(p, reported); st {
		case memberUnprepared, memberFailed:
			d.abort(s, "PrepareFailed", msg)
			return true
		case memberPrepared, memberRunning, memberSucceeded:
			prepared++
		}
	}
	switch {
	case prepared == len(s.res.Members):
		s.decision = &jobs.Decision{Members: memberStatuses(s), Dispatch: s.dispatch(v1alpha1.DispatchCommitted, "",
			fmt.Sprintf("all %d members prepared; committed epoch %d", prepared, s.res.Epoch))}
		s.create, s.stamp, s.committed = false, true, s.now
		s.wake = s.now.Add(d.cfg.StartTimeout)
	case disp.Time != nil && s.now.Sub(disp.Time.Time) > d.cfg.PrepareTimeout:
		d.abort(s, "PrepareTimeout", fmt.Sprintf("%d of %d members prepared within %s; not prepared: %s",
			prepared, len(s.res.Members), d.cfg.PrepareTimeout, describeLate(notPrepared(s))))
	case disp.Time != nil:
		// Pass again just past the deadline: a member that never reports
		// Prepared sends no event.
		s.wakeAt(disp.Time.Add(d.cfg.PrepareTimeout + time.Millisecond))
	}
	return true
}

// wakeAt sets the pass's wake to t unless an earlier one is set.
func (s *scope) wakeAt(t time.Time) {
	if s.wake.IsZero() || t.Before(s.wake) {
		s.wake = t
	}
}

// abort decides the abort of the epoch's dispatch and tears it down.
func (d *Dispatcher) abort(s *scope, reason, msg string) {
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchAborting, reason, msg)}
	s.create, s.teardown = false, &teardown{}
}

// follow is phase two onwards: keep the commit stamped, aggregate the
// member phases, restart the whole gang when a member fails, abort it when
// it is not fully running by the start deadline.
func (d *Dispatcher) follow(s *scope) bool {
	disp := current(s)
	if disp.Phase != v1alpha1.DispatchCommitted {
		return false
	}
	s.stamp = true
	if disp.Time != nil {
		s.committed = disp.Time.Time
	}
	var running, succeeded int
	for _, p := range s.pods {
		st, msg := stateOf(p)
		switch {
		case st == memberFailed || p.DeletionTimestamp != nil && st != memberSucceeded:
			if msg == "" {
				msg = fmt.Sprintf("member %s was deleted", p.Name)
			}
			d.restartOrFail(s, msg)
			return true
		case st == memberRunning:
			running++
		case st == memberSucceeded:
			succeeded++
		}
	}
	if n := len(s.res.Members); len(s.pods) < n {
		d.restartOrFail(s, fmt.Sprintf("%d of %d members are gone", n-len(s.pods), n))
		return true
	}
	if d.startDeadline(s, disp) {
		return true
	}
	s.aggregate = true
	n := len(s.res.Members)
	s.started = running+succeeded == n && succeeded < n && s.job.Object.Status.Phase != v1alpha1.JobRunning
	s.finished = succeeded == n
	return true
}

// restartOrFail decides a whole-gang restart, or failure past maxRestarts.
func (d *Dispatcher) restartOrFail(s *scope, msg string) {
	j := s.job.Object
	limit := v1alpha1.DefaultMaxRestarts
	if m := j.Spec.FailurePolicy.MaxRestarts; m != nil {
		limit = *m
	}
	s.teardown = &teardown{}
	if j.Status.Restarts >= limit {
		// The job fails: its ended members (the failed one among them)
		// stay for FinishedRetention, only the others are stopped.
		s.teardown.keepFinished = d.cfg.FinishedRetention > 0
		s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchFailing, "",
			fmt.Sprintf("%s; %d restarts used of %d", msg, j.Status.Restarts, limit))}
		return
	}
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchRestarting, "",
		fmt.Sprintf("%s; restarting the whole gang (restart %d of %d)", msg, j.Status.Restarts+1, limit))}
}

// finish carries out an abort, restart or failure decided in an earlier pass.
func (d *Dispatcher) finish(s *scope) bool {
	disp := current(s)
	switch disp.Phase {
	case v1alpha1.DispatchRestarting:
		s.teardown = &teardown{finish: d.requeue(string(v1alpha1.DispatchRestarting), disp.Message, false, s.now)}
	case v1alpha1.DispatchFailing:
		t := jobs.Fail(s.now)
		s.teardown = &teardown{finish: &t, keepFinished: d.cfg.FinishedRetention > 0}
	case v1alpha1.DispatchAborting:
		if disp.Reason == v1alpha1.ReasonDrained || disp.Reason == v1alpha1.ReasonClusterLost || disp.Reason == v1alpha1.ReasonNodeReclaimed {
			// Moved, not failed: the preemption grace, no backoff, no restart counted.
			s.teardown = &teardown{grace: grace(s.job.Object), finish: d.requeue(disp.Reason, disp.Message, false, s.now)}
			return true
		}
		reason := disp.Reason
		if reason == "" {
			reason = string(v1alpha1.DispatchAborting)
		}
		s.teardown = &teardown{finish: d.requeue(reason, disp.Message, true, s.now)}
	}
	return true
}

// requeue is the job's transition back to Pending, with the abort backoff
// when backoff is set.
func (d *Dispatcher) requeue(reason, msg string, backoff bool, now time.Time) *jobs.Transition {
	r := jobs.Requeue{Reason: reason, Message: msg, At: now}
	if backoff {
		r.Backoff, r.MaxBackoff = d.cfg.Backoff, d.cfg.MaxBackoff
	}
	t := r.Transition()
	return &t
}

// current is the job's decision for the reservation's epoch (nil: none yet).
func current(s *scope) *v1alpha1.DispatchStatus {
	if d := jobs.DispatchOf(s.job.Object); d != nil && d.Epoch == s.res.Epoch {
		return d
	}
	return nil
}

// dispatch is a decision of the reservation's epoch taken now.
func (s *scope) dispatch(phase v1alpha1.DispatchPhase, reason, msg string) v1alpha1.DispatchStatus {
	t := metav1.NewTime(s.now)
	return v1alpha1.DispatchStatus{Epoch: s.res.Epoch, Phase: phase, Reason: reason, Message: msg, Time: &t}
}

// grace is the job's preemption grace period in seconds.
func grace(j *v1alpha1.Job) int64 {
	if g := j.Spec.Preemption.GracePeriodSeconds; g != nil {
		return *g
	}
	return v1alpha1.DefaultGracePeriodSeconds
}
