package dispatch

import (
	"context"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// Annotations on jobs written by the dispatcher.
const (
	// AnnotationNotBefore keeps a requeued job out of scheduling until then
	// (the scheduler reads it; same key as scheduler.AnnotationNotBefore).
	AnnotationNotBefore = "shoal.dev/not-before"
	// AnnotationAborts counts the job's aborted dispatches (for backoff).
	AnnotationAborts = "shoal.dev/aborts"
	// AnnotationPreemptedBy names the preemptor (written by the scheduler).
	AnnotationPreemptedBy = "shoal.dev/preempted-by"
	// ConditionPreempted is the scheduler's preemption mark.
	ConditionPreempted = "Preempted"
)

// reconcile drives one job one step.
func (d *Dispatcher) reconcile(ctx context.Context, w *work) error {
	j, rev, err := d.jobs.Get(ctx, w.name)
	if errors.Is(err, store.ErrNotFound) {
		return d.teardown(ctx, w, nil, 0, 0, nil)
	}
	if err != nil {
		return err
	}
	it := store.Item[*v1alpha1.Job]{Name: w.name, Object: j, Revision: rev}
	switch {
	case j.Status.Phase.Terminal():
		return d.teardown(ctx, w, nil, 0, 0, nil)
	case w.res == nil:
		return d.deletePods(ctx, w.pods, 0) // leftovers of an old epoch
	case w.res.Epoch != j.Status.Epoch:
		return nil // the scheduler writes both at once; wait for a consistent read
	}
	var cur, old []*corev1.Pod
	for _, p := range w.pods {
		if epochOf(p) == w.res.Epoch {
			cur = append(cur, p)
		} else {
			old = append(old, p)
		}
	}
	if err := d.deletePods(ctx, old, 0); err != nil {
		return err
	}
	w.pods = cur
	if c := meta.FindStatusCondition(j.Status.Conditions, ConditionPreempted); c != nil && c.Status == metav1.ConditionTrue {
		return d.teardown(ctx, w, &it, grace(j), 0, requeue("Preempted", c.Message, false))
	}
	disp := meta.FindStatusCondition(j.Status.Conditions, ConditionDispatched)
	switch {
	case disp == nil || disp.Status == metav1.ConditionUnknown:
		return d.prepare(ctx, w, it, disp)
	case disp.Status == metav1.ConditionTrue:
		return d.follow(ctx, w, it)
	default:
		return d.finishDecision(ctx, w, it, disp)
	}
}

// grace is the job's preemption grace period in seconds.
func grace(j *v1alpha1.Job) int64 {
	if g := j.Spec.Preemption.GracePeriodSeconds; g != nil {
		return *g
	}
	return v1alpha1.DefaultGracePeriodSeconds
}

// setDispatched writes the two-phase decision into the job before it is acted on.
func (d *Dispatcher) setDispatched(ctx context.Context, it store.Item[*v1alpha1.Job], status metav1.ConditionStatus,
	reason, msg string, mutate func(*v1alpha1.Job)) (store.Item[*v1alpha1.Job], error) {
	next := copyJob(it.Object)
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: ConditionDispatched, Status: status,
		Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(d.cfg.Clock.Now()),
		ObservedGeneration: next.Generation})
	if mutate != nil {
		mutate(next)
	}
	rev, err := d.jobs.Update(ctx, it.Name, next, it.Revision)
	if err != nil {
		return it, err
	}
	observeDecision(reason)
	return store.Item[*v1alpha1.Job]{Name: it.Name, Object: next, Revision: rev}, nil
}

// abort records the abort decision and starts the teardown.
func (d *Dispatcher) abort(ctx context.Context, w *work, it store.Item[*v1alpha1.Job], reason, msg string) error {
	it, err := d.setDispatched(ctx, it, metav1.ConditionFalse, ReasonAborting, reason+": "+msg, nil)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Aborting a gang's dispatch", "job", it.Name, "epoch", w.res.Epoch, "reason", reason, "message", msg)
	return d.teardown(ctx, w, &it, 0, 0, requeue(reason, msg, true))
}

// finishDecision carries out an abort, restart or failure already decided.
func (d *Dispatcher) finishDecision(ctx context.Context, w *work, it store.Item[*v1alpha1.Job], disp *metav1.Condition) error {
	switch disp.Reason {
	case ReasonRestarting:
		return d.teardown(ctx, w, &it, 0, 0, requeue(ReasonRestarting, disp.Message, false))
	case ReasonFailing:
		return d.teardown(ctx, w, &it, 0, 0, fail(it.Object.Status.Conditions))
	default:
		reason, msg, ok := strings.Cut(disp.Message, ": ")
		if !ok {
			reason, msg = ReasonAborting, disp.Message
		}
		return d.teardown(ctx, w, &it, 0, 0, requeue(reason, msg, true))
	}
}

// Reasons of the Dispatched condition after the gang ran.
const (
	ReasonRestarting = "Restarting"
	ReasonFailing    = "Failing"
)
