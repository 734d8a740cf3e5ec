// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// Booking is a placement the scheduler booked for a job.
type Booking struct {
	// Epoch is the new placement epoch.
	Epoch int64
	// Clusters and Domain say where the gang went.
	Clusters []string
	Domain   string
	// Members are the members' placements, in index order.
	Members []v1alpha1.MemberStatus
	// Message explains the placement, for people.
	Message string
	// At is the time of the decision.
	At time.Time
}

// Book makes a job Placed under a booking (scheduler): the new epoch,
// placement and members, Placed=True; the Preempted mark and the requeue
// backoff go. The scheduler writes it with the ledger's reservation in one
// transaction (Status.Ops).
func Book(b Booking) Transition {
	return Transition{Name: "book", Owns: []string{v1alpha1.JobConditionPlaced, v1alpha1.JobConditionPreempted},
		apply: func(j *v1alpha1.Job) bool {
			delete(j.Annotations, v1alpha1.AnnotationNotBefore)
			t := metav1.NewTime(b.At)
			st := &j.Status
			st.Phase, st.Epoch = v1alpha1.JobPlaced, b.Epoch
			st.Placement = &v1alpha1.PlacementStatus{Clusters: b.Clusters, Domain: b.Domain, Explanation: b.Message, Time: &t}
			st.Members = b.Members
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
				Status: metav1.ConditionTrue, Reason: "Reserved", Message: b.Message, LastTransitionTime: t,
				ObservedGeneration: j.Generation})
			meta.RemoveStatusCondition(&st.Conditions, v1alpha1.JobConditionPreempted)
			return true
		}}
}

// Explain records why a pending job waits (scheduler): Placed=False with the
// placement engine's reason and message. Nothing is written when the job
// already says so.
func Explain(reason, message string, at time.Time) Transition {
	return Transition{Name: "explain", Owns: []string{v1alpha1.JobConditionPlaced}, apply: func(j *v1alpha1.Job) bool {
		c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == message {
			return false
		}
		t := metav1.NewTime(at)
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
			Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: t,
			ObservedGeneration: j.Generation})
		j.Status.Placement = &v1alpha1.PlacementStatus{Explanation: message, Time: &t}
		return true
	}}
}

// MarkPreempted marks a job as preempted for preemptor (scheduler):
// Preempted=True and the annotation naming the preemptor; the dispatcher
// then stops its members with their grace period. A job already marked is
// left as it is.
func MarkPreempted(preemptor, message string, at time.Time) Transition {
	return Transition{Name: "mark preempted", Owns: []string{v1alpha1.JobConditionPreempted}, apply: func(j *v1alpha1.Job) bool {
		if Preempted(j) {
			return false
		}
		if j.Annotations == nil {
			j.Annotations = map[string]string{}
		}
		j.Annotations[v1alpha1.AnnotationPreemptedBy] = preemptor
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPreempted,
			Status: metav1.ConditionTrue, Reason: "PreemptedBy", Message: message, LastTransitionTime: metav1.NewTime(at),
			ObservedGeneration: j.Generation})
		return true
	}}
}

// Preempted reports whether the job is marked as preempted.
func Preempted(j *v1alpha1.Job) bool {
	return meta.IsStatusConditionTrue(j.Status.Conditions, v1alpha1.JobConditionPreempted)
}

// Decision is a two-phase dispatch decision to record.
type Decision struct {
	// Dispatch is the decision; its Time is when it was taken.
	Dispatch v1alpha1.DispatchStatus
	// Members, when not nil, replaces the members' statuses (the commit
	// records the prepared members).
	Members []v1alpha1.MemberStatus
}

// Decide records the dispatcher's decision before it is acted on: the typed
// status.dispatch and the Dispatched condition computed from it (Unknown
// while preparing, True once committed, False when aborting, restarting or
// failing). Deciding a restart counts it in status.restarts.
func Decide(dec Decision) Transition {
	return Transition{Name: "decide", Owns: []string{v1alpha1.JobConditionDispatched}, apply: func(j *v1alpha1.Job) bool {
		d := dec.Dispatch
		if d.Time == nil {
			panic("jobs.Decide: a decision without a time")
		}
		j.Status.Dispatch = &d
		status := metav1.ConditionFalse
		switch d.Phase {
		case v1alpha1.DispatchPreparing:
			status = metav1.ConditionUnknown
		case v1alpha1.DispatchCommitted:
			status = metav1.ConditionTrue
		case v1alpha1.DispatchRestarting:
			j.Status.Restarts++
		}
		msg := d.Message
		if (d.Phase == v1alpha1.DispatchAborting || d.Phase == v1alpha1.DispatchFailing) && d.Reason != "" {
			msg = d.Reason + ": " + d.Message
		}
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionDispatched,
			Status: status, Reason: string(d.Phase), Message: msg, LastTransitionTime: *d.Time,
			ObservedGeneration: j.Generation})
		if dec.Members != nil {
			j.Status.Members = dec.Members
		}
		return true
	}}
}

// DispatchOf returns the job's dispatch decision: status.dispatch, or for
// a job dispatched by an older hub, which recorded it only as the
// Dispatched condition, the decision that condition's reason names (for the
// job's current epoch; an abort's cause, then only in the message, is not
// recovered).
func DispatchOf(j *v1alpha1.Job) *v1alpha1.DispatchStatus {
	if d := j.Status.Dispatch; d != nil {
		return d
	}
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionDispatched)
	if c == nil {
		return nil
	}
	t := c.LastTransitionTime
	return &v1alpha1.DispatchStatus{Epoch: j.Status.Epoch, Phase: v1alpha1.DispatchPhase(c.Reason), Message: c.Message, Time: &t}
}

// Aggregate folds the members' phases into the job (dispatcher): Running
// with Running=True once every member runs, Succeeded with Finished=True
// once every member succeeded.
func Aggregate(members []v1alpha1.MemberStatus, epoch int64, at time.Time) Transition {
	return Transition{Name: "aggregate", Owns: []string{v1alpha1.JobConditionRunning, v1alpha1.JobConditionFinished},
		apply: func(j *v1alpha1.Job) bool {
			st := &j.Status
			st.Members = members
			var running, succeeded int
			for _, m := range members {
				switch m.Phase {
				case v1alpha1.MemberRunning:
					running++
				case v1alpha1.MemberSucceeded:
					succeeded++
				}
			}
			now := metav1.NewTime(at)
			switch n := len(members); {
			case n == 0:
			case succeeded == n:
				st.Phase, st.CompletionTime = v1alpha1.JobSucceeded, &now
				meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionFinished,
					Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "every member succeeded", LastTransitionTime: now})
				meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionRunning,
					Status: metav1.ConditionFalse, Reason: "Succeeded", LastTransitionTime: now})
			case running+succeeded == n && st.Phase != v1alpha1.JobRunning:
				st.Phase = v1alpha1.JobRunning
				if st.StartTime == nil {
					st.StartTime = &now
				}
				meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionRunning,
					Status: metav1.ConditionTrue, Reason: "AllMembersRunning",
					Message: fmt.Sprintf("all %d members run (epoch %d)", n, epoch), LastTransitionTime: now})
			}
			return true
		}}
}

// Requeue returns a torn-down job to Pending (dispatcher, with the release
// of its reservation): members, the dispatch decision and the preemption go,
// Placed=False says why. With a Backoff the job may be placed again only
// after a delay that doubles with each abort (annotations shoal.dev/aborts
// and shoal.dev/not-before).
type Requeue struct {
	// Reason and Message go into the Placed condition.
	Reason, Message string
	// Backoff is the first delay; 0 requeues at once. It doubles per abort
	// up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// At is the time of the requeue.
	At time.Time
}

// Transition is the requeue as a Transition.
func (r Requeue) Transition() Transition {
	return Transition{Name: "requeue", Owns: []string{v1alpha1.JobConditionDispatched, v1alpha1.JobConditionPreempted,
		v1alpha1.JobConditionRunning, v1alpha1.JobConditionPlaced}, apply: func(j *v1alpha1.Job) bool {
		st := &j.Status
		st.Phase, st.Members, st.Dispatch = v1alpha1.JobPending, nil, nil
		for _, c := range []string{v1alpha1.JobConditionDispatched, v1alpha1.JobConditionPreempted, v1alpha1.JobConditionRunning} {
			meta.RemoveStatusCondition(&st.Conditions, c)
		}
		delete(j.Annotations, v1alpha1.AnnotationPreemptedBy)
		if j.Annotations == nil {
			j.Annotations = map[string]string{}
		}
		tracing.NewAttempt(r.At).Annotate(j.Annotations) // the next attempt's trace
		text := r.Message
		if r.Backoff > 0 {
			n, _ := strconv.Atoi(j.Annotations[v1alpha1.AnnotationAborts])
			n++
			delay := min(r.Backoff<<min(n-1, 20), r.MaxBackoff)
			j.Annotations[v1alpha1.AnnotationAborts] = strconv.Itoa(n)
			j.Annotations[v1alpha1.AnnotationNotBefore] = r.At.Add(delay).UTC().Format(time.RFC3339Nano)
			text = fmt.Sprintf("%s; requeued, placed again after %s", r.Message, delay)
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
			Status: metav1.ConditionFalse, Reason: r.Reason, Message: text, LastTransitionTime: metav1.NewTime(r.At)})
		return true
	}}
}

// NotBefore returns the time before which a requeued job is not placed
// again, if it has one.
func NotBefore(j *v1alpha1.Job) (time.Time, bool) {
	v, ok := j.Annotations[v1alpha1.AnnotationNotBefore]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// Fail ends a torn-down job as Failed (dispatcher, with the release of its
// reservation): Finished=True, with the failing decision's reason (default
// MaxRestartsExceeded; ClusterLost for onClusterLoss: Fail) and message.
func Fail(at time.Time) Transition {
	return Transition{Name: "fail", Owns: []string{v1alpha1.JobConditionRunning, v1alpha1.JobConditionFinished},
		apply: func(j *v1alpha1.Job) bool {
			msg, reason := "the gang failed", "MaxRestartsExceeded"
			if d := j.Status.Dispatch; d != nil && d.Message != "" {
				msg = d.Message
			}
			if d := j.Status.Dispatch; d != nil && d.Reason != "" {
				reason = d.Reason
			}
			t := metav1.NewTime(at)
			j.Status.Phase, j.Status.CompletionTime = v1alpha1.JobFailed, &t
			meta.RemoveStatusCondition(&j.Status.Conditions, v1alpha1.JobConditionRunning)
			meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: v1alpha1.JobConditionFinished,
				Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: t})
			return true
		}}
}

// cancel moves a job that is not finished to Cancelled (the user, through
// Service.Cancel).
func cancel(at time.Time) Transition {
	return Transition{Name: "cancel", Owns: []string{v1alpha1.JobConditionFinished}, apply: func(j *v1alpha1.Job) bool {
		if j.Status.Phase.Terminal() {
			return false
		}
		now := metav1.NewTime(at)
		j.Status.Phase, j.Status.CompletionTime = v1alpha1.JobCancelled, &now
		meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{
			Type: v1alpha1.JobConditionFinished, Status: metav1.ConditionTrue, Reason: "Cancelled",
			Message: "cancelled by the user", LastTransitionTime: now, ObservedGeneration: 1,
		})
		return true
	}}
}
