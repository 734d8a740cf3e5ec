// SPDX-License-Identifier: Apache-2.0

package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span names of a job attempt's trace.
const (
	// SpanAttempt is the root: the attempt from its start (submit or
	// requeue) until every member runs, or until it ends without.
	SpanAttempt = "job.attempt"
	// PhaseSubmit is the hub's submit of the job (first attempt only).
	PhaseSubmit = "submit"
	// PhaseSchedule is the attempt's start to the scheduler's decision to
	// place it, with PhaseQueueWait and PhaseDecide as children.
	PhaseSchedule = "schedule"
	// PhaseQueueWait is the attempt's start to the start of the scheduling
	// cycle that placed it.
	PhaseQueueWait = "schedule.queue_wait"
	// PhaseDecide is that cycle's read and placement decision.
	PhaseDecide = "schedule.decide"
	// PhaseBook is the booking transaction: reservation and Placed status.
	PhaseBook = "book"
	// PhasePrepare is the dispatcher's Preparing decision to its commit,
	// parent of every member's MemberPrepare.
	PhasePrepare = "prepare"
	// PhaseCommit is the commit decision and the commit stamps on the
	// members, parent of every member's MemberCommit.
	PhaseCommit = "commit"
	// PhaseRunning is the commit to every member running, parent of every
	// member's MemberRunning.
	PhaseRunning = "running"
	// MemberPrepare is an agent's local pod creation to Prepared.
	MemberPrepare = "member.prepare"
	// MemberCommit is an agent lifting the gang gate of its local pod.
	MemberCommit = "member.commit"
	// MemberRunning is the gate lifted to the local pod running.
	MemberRunning = "member.running"
)

// Attribute keys of the spans.
const (
	KeyJob      = attribute.Key("shoal.job")
	KeyQueue    = attribute.Key("shoal.queue")
	KeyEpoch    = attribute.Key("shoal.epoch")
	KeyCluster  = attribute.Key("shoal.cluster")
	KeyClusters = attribute.Key("shoal.clusters")
	KeyMember   = attribute.Key("shoal.member")
)

// Span is a finished step to emit.
type Span struct {
	// Name is the span's name (its phase for EmitPhase).
	Name string
	// Start and End are the step's times.
	Start, End time.Time
	// Attrs are the span's attributes.
	Attrs []attribute.KeyValue
	// Error, when not empty, marks the span failed with this description.
	Error string
	// Links are other spans the step relates to (the submit RPC's span).
	Links []trace.Link
}

const tracerName = "github.com/shoal-dev/shoal"

// EmitRoot emits the attempt's root span, with the ids and sampling
// decision minted when the attempt started; its name is SpanAttempt and it
// starts at the attempt's start when s.Start is zero.
func (a Attempt) EmitRoot(ctx context.Context, s Span) {
	if !a.Valid() || !Enabled() {
		return
	}
	if s.Start.IsZero() {
		s.Start = a.Start
	}
	s.Name = SpanAttempt
	ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{}) // no parent
	emit(withForced(ctx, forced{traceID: a.Root.TraceID(), spanID: a.Root.SpanID(), sampled: a.Root.IsSampled()}), s)
}

// EmitPhase emits the hub's span of phase s.Name under the span of phase
// parent ("" for the root), with the derived id PhaseSpanID.
func (a Attempt) EmitPhase(ctx context.Context, parent string, s Span) {
	if !a.Valid() || !Enabled() {
		return
	}
	ctx = trace.ContextWithRemoteSpanContext(ctx, a.phaseContext(parent))
	emit(withForced(ctx, forced{spanID: PhaseSpanID(a.Root.TraceID(), s.Name)}), s)
}

// EmitUnder emits a span with an id of its own under the hub's span of
// phase (an agent's member span).
func (a Attempt) EmitUnder(ctx context.Context, phase string, s Span) {
	if !a.Valid() || !Enabled() {
		return
	}
	emit(trace.ContextWithRemoteSpanContext(ctx, a.phaseContext(phase)), s)
}

// phaseContext is the span context of the hub's span of phase ("" for the
// root).
func (a Attempt) phaseContext(phase string) trace.SpanContext {
	if phase == "" {
		return a.Root
	}
	return a.Root.WithSpanID(PhaseSpanID(a.Root.TraceID(), phase))
}

func emit(ctx context.Context, s Span) {
	end := s.End
	if end.Before(s.Start) {
		end = s.Start
	}
	_, span := otel.Tracer(tracerName).Start(ctx, s.Name, trace.WithTimestamp(s.Start),
		trace.WithAttributes(s.Attrs...), trace.WithLinks(s.Links...), trace.WithSpanKind(trace.SpanKindInternal))
	if s.Error != "" {
		span.SetStatus(codes.Error, s.Error)
	}
	span.End(trace.WithTimestamp(end))
}
