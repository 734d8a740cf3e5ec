// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// memberTrace is what the agent measured and traced of one member, for the
// spans of its job attempt (docs/tracing.md): created and committed are
// when the agent began to create the local pod and lifted its gate.
type memberTrace struct {
	created, committed time.Time
	prepared, running  bool
}

// memberAttrs are the span attributes of a hub member pod.
func memberAttrs(hub *corev1.Pod) []attribute.KeyValue {
	a := []attribute.KeyValue{tracing.KeyJob.String(hub.Labels[v1alpha1.LabelJob]),
		tracing.KeyCluster.String(hub.Labels[v1alpha1.LabelCluster]),
		tracing.KeyQueue.String(hub.Annotations[v1alpha1.AnnotationQueue]),
		attribute.String("k8s.pod.name", hub.Name)}
	if e, err := strconv.ParseInt(hub.Annotations[v1alpha1.AnnotationEpoch], 10, 64); err == nil {
		a = append(a, tracing.KeyEpoch.Int64(e))
	}
	if m, err := strconv.Atoi(hub.Labels[v1alpha1.LabelMember]); err == nil {
		a = append(a, tracing.KeyMember.Int(m))
	}
	return a
}

// traceStatus emits the member's prepare span when its local status first
// says Prepared (True, or False: failed), and its running span when the
// local pod first runs. Called with s.mu held, after e.status changed.
func (e *entry) traceStatus(ctx context.Context, now time.Time) {
	if !tracing.Enabled() || e.lost {
		return
	}
	a, ok := tracing.AttemptOf(e.hub.Annotations)
	if !ok {
		return
	}
	if !e.trace.prepared {
		for _, c := range e.status.Conditions {
			if c.Type != v1alpha1.PodConditionPrepared || c.Status == corev1.ConditionUnknown {
				continue
			}
			sp := tracing.Span{Name: tracing.MemberPrepare, Start: e.trace.created, End: now, Attrs: memberAttrs(e.hub)}
			if c.Status == corev1.ConditionFalse {
				sp.Error = c.Reason + ": " + c.Message
			}
			if sp.Start.IsZero() {
				sp.Start = now
			}
			a.EmitUnder(ctx, tracing.PhasePrepare, sp)
			e.trace.prepared = true
		}
	}
	if !e.trace.running && e.status.Phase == corev1.PodRunning {
		start := e.trace.committed
		if start.IsZero() {
			start = now
		}
		a.EmitUnder(ctx, tracing.PhaseRunning, tracing.Span{Name: tracing.MemberRunning, Start: start, End: now,
			Attrs: memberAttrs(e.hub)})
		e.trace.running = true
	}
}

// traceCommit emits the member's commit span, from began (the hub pod's
// update that carried the commit) to now, the first time the gate of a
// committed member was lifted.
func (e *entry) traceCommit(ctx context.Context, began, now time.Time) {
	if !tracing.Enabled() || !e.trace.committed.IsZero() {
		return
	}
	epoch := e.hub.Annotations[v1alpha1.AnnotationEpoch]
	if epoch == "" || e.hub.Annotations[v1alpha1.AnnotationCommit] != epoch {
		return
	}
	a, ok := tracing.AttemptOf(e.hub.Annotations)
	if !ok {
		return
	}
	a.EmitUnder(ctx, tracing.PhaseCommit, tracing.Span{Name: tracing.MemberCommit, Start: began, End: now, Attrs: memberAttrs(e.hub)})
	e.trace.committed = now
}
