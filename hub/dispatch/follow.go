package dispatch

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// follow is phase two onwards: keep the commit stamped, aggregate member
// phases, restart the whole gang when a member fails.
func (d *Dispatcher) follow(ctx context.Context, w *work, it store.Item[*v1alpha1.Job]) error {
	if err := d.stamp(ctx, w); err != nil {
		return err
	}
	j := it.Object
	var running, succeeded int
	for _, p := range w.pods {
		st, msg := stateOf(p)
		switch {
		case st == memberFailed || p.DeletionTimestamp != nil && st != memberSucceeded:
			if msg == "" {
				msg = fmt.Sprintf("member %s was deleted", p.Name)
			}
			return d.restartOrFail(ctx, w, it, msg)
		case st == memberRunning:
			running++
		case st == memberSucceeded:
			succeeded++
		}
	}
	if len(w.pods) < len(w.res.Members) {
		return d.restartOrFail(ctx, w, it, fmt.Sprintf("%d of %d members are gone",
			len(w.res.Members)-len(w.pods), len(w.res.Members)))
	}
	next := copyJob(j)
	next.Status.Members = memberStatuses(w)
	now := metav1.NewTime(d.cfg.Clock.Now())
	switch {
	case succeeded == len(w.res.Members):
		next.Status.Phase, next.Status.CompletionTime = v1alpha1.JobSucceeded, &now
		meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionFinished,
			Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "every member succeeded", LastTransitionTime: now})
		meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionRunning,
			Status: metav1.ConditionFalse, Reason: "Succeeded", LastTransitionTime: now})
	case running+succeeded == len(w.res.Members) && j.Status.Phase != v1alpha1.JobRunning:
		next.Status.Phase = v1alpha1.JobRunning
		if next.Status.StartTime == nil {
			next.Status.StartTime = &now
		}
		meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionRunning,
			Status: metav1.ConditionTrue, Reason: "AllMembersRunning",
			Message: fmt.Sprintf("all %d members run (epoch %d)", len(w.res.Members), w.res.Epoch), LastTransitionTime: now})
		if err := d.ledger.MarkStarted(ctx, it.Name, w.res.Epoch, now.Time); err != nil {
			return err
		}
		d.observeRunning(it.Name, w.res.Epoch, now.Time)
	}
	if reflect.DeepEqual(next.Status, j.Status) {
		return nil
	}
	_, err := d.jobs.Update(ctx, it.Name, next, it.Revision)
	return err
}

// restartOrFail decides a whole-gang restart, or failure past maxRestarts.
func (d *Dispatcher) restartOrFail(ctx context.Context, w *work, it store.Item[*v1alpha1.Job], msg string) error {
	j := it.Object
	limit := v1alpha1.DefaultMaxRestarts
	if m := j.Spec.FailurePolicy.MaxRestarts; m != nil {
		limit = *m
	}
	if j.Status.Restarts >= limit {
		it, err := d.setDispatched(ctx, it, metav1.ConditionFalse, ReasonFailing,
			fmt.Sprintf("%s; %d restarts used of %d", msg, j.Status.Restarts, limit), nil)
		if err != nil {
			return err
		}
		return d.teardown(ctx, w, &it, 0, 0, fail(it.Object.Status.Conditions))
	}
	it, err := d.setDispatched(ctx, it, metav1.ConditionFalse, ReasonRestarting,
		fmt.Sprintf("%s; restarting the whole gang (restart %d of %d)", msg, j.Status.Restarts+1, limit),
		func(n *v1alpha1.Job) { n.Status.Restarts++ })
	if err != nil {
		return err
	}
	return d.teardown(ctx, w, &it, 0, 0, requeue(ReasonRestarting, msg, false))
}

// memberStatuses returns each member's placement and phase.
func memberStatuses(w *work) []v1alpha1.MemberStatus {
	byName := map[string]memberState{}
	for _, p := range w.pods {
		st, _ := stateOf(p)
		byName[p.Name] = st
	}
	out := make([]v1alpha1.MemberStatus, len(w.res.Members))
	for i, m := range w.res.Members {
		phase := v1alpha1.MemberPending
		switch byName[PodName(w.name, w.res.Epoch, m.Index)] {
		case memberPrepared:
			phase = v1alpha1.MemberPrepared
		case memberRunning:
			phase = v1alpha1.MemberRunning
		case memberSucceeded:
			phase = v1alpha1.MemberSucceeded
		case memberFailed, memberUnprepared:
			phase = v1alpha1.MemberFailed
		}
		out[i] = v1alpha1.MemberStatus{Index: m.Index, Cluster: m.Cluster, Node: m.Node, Domain: m.Domain, Phase: phase}
	}
	return out
}
