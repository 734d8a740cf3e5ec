package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// finisher changes a job once its members are gone; now is the pass's time.
type finisher func(j *v1alpha1.Job, now time.Time, d *Dispatcher)

// teardown deletes every member with grace seconds; once none is left it
// releases the reservation and, with it (one transaction), applies finish
// to the job.
func (d *Dispatcher) teardown(ctx context.Context, w *work, it *store.Item[*v1alpha1.Job], grace int64, _ int, finish finisher) error {
	if len(w.pods) > 0 {
		return d.deletePods(ctx, w.pods, grace)
	}
	var conds []store.Cond
	var ops []store.Op
	if w.res != nil {
		c, o := d.ledger.ReleaseGuarded(w.name, w.resRev)
		conds, ops = append(conds, c), append(ops, o)
	}
	if it != nil && finish != nil {
		next := copyJob(it.Object)
		finish(next, d.cfg.Clock.Now(), d)
		conds, ops = append(conds, d.jobs.RevIs(it.Name, it.Revision)), append(ops, d.jobs.PutOp(it.Name, next))
	}
	if len(ops) == 0 {
		return nil
	}
	if _, err := d.st.Txn(ctx).If(conds...).Then(ops...).Commit(); err != nil {
		return err
	}
	err := d.hub.CoreV1().Services(d.cfg.Namespace).Delete(ctx, w.name, metav1.DeleteOptions{})
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// requeue returns the job to Pending; with backoff it may be placed again
// only after a delay that doubles with each abort.
func requeue(reason, msg string, backoff bool) finisher {
	return func(j *v1alpha1.Job, now time.Time, d *Dispatcher) {
		st := &j.Status
		st.Phase, st.Members = v1alpha1.JobPending, nil
		for _, c := range []string{ConditionDispatched, ConditionPreempted, v1alpha1.JobConditionRunning} {
			meta.RemoveStatusCondition(&st.Conditions, c)
		}
		delete(j.Annotations, AnnotationPreemptedBy)
		if j.Annotations == nil {
			j.Annotations = map[string]string{}
		}
		text := msg
		if backoff {
			n, _ := strconv.Atoi(j.Annotations[AnnotationAborts])
			n++
			delay := d.cfg.Backoff << min(n-1, 20)
			delay = min(delay, d.cfg.MaxBackoff)
			j.Annotations[AnnotationAborts] = strconv.Itoa(n)
			j.Annotations[AnnotationNotBefore] = now.Add(delay).UTC().Format(time.RFC3339Nano)
			text = fmt.Sprintf("%s; requeued, placed again after %s", msg, delay)
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
			Status: metav1.ConditionFalse, Reason: reason, Message: text, LastTransitionTime: metav1.NewTime(now)})
	}
}

// fail ends the job as Failed with the failing decision's message.
func fail(conds []metav1.Condition) finisher {
	msg := "the gang failed"
	if c := meta.FindStatusCondition(conds, ConditionDispatched); c != nil {
		msg = c.Message
	}
	return func(j *v1alpha1.Job, now time.Time, _ *Dispatcher) {
		t := metav1.NewTime(now)
		j.Status.Phase, j.Status.CompletionTime = v1alpha1.JobFailed, &t
		meta.RemoveStatusCondition(&j.Status.Conditions, v1alpha1.JobConditionRunning)
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionFinished,
			Status: metav1.ConditionTrue, Reason: "MaxRestartsExceeded", Message: msg, LastTransitionTime: t})
	}
}

// copyJob deep-copies a job, without its resourceVersion.
func copyJob(j *v1alpha1.Job) *v1alpha1.Job {
	out := j.DeepCopy()
	out.ResourceVersion = ""
	return out
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
