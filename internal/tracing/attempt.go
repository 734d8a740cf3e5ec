// SPDX-License-Identifier: Apache-2.0

package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Attempt is the trace of one job attempt as stored on the job: the root
// span's context and the attempt's start.
type Attempt struct {
	// Root is the root span's context: trace id, the root's span id and
	// the sampling decision.
	Root trace.SpanContext
	// Start is when the attempt started (submit or requeue); zero when read
	// from a member pod, which carries only the traceparent.
	Start time.Time
}

// NewAttempt mints the trace of an attempt starting at start, sampled by
// the configured ratio. Without tracing it returns the zero Attempt, which
// Annotate removes and every Emit ignores.
func NewAttempt(start time.Time) Attempt {
	if !Enabled() {
		return Attempt{}
	}
	tid, sid := randomTraceID(), randomSpanID()
	r, _ := ratio.Load().(float64)
	var flags trace.TraceFlags
	res := sdktrace.TraceIDRatioBased(r).ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: tid})
	if res.Decision == sdktrace.RecordAndSample {
		flags = trace.FlagsSampled
	}
	return Attempt{Root: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags}), Start: start}
}

// Valid reports whether a is an attempt's trace.
func (a Attempt) Valid() bool { return a.Root.IsValid() }

// TraceParent is the W3C traceparent of the root span ("" when not valid).
func (a Attempt) TraceParent() string {
	if !a.Valid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), a.Root), c)
	return c.Get("traceparent")
}

// Annotate records a in the annotations of a job (traceparent and start),
// or removes both when a is not valid.
func (a Attempt) Annotate(ann map[string]string) {
	if !a.Valid() {
		delete(ann, v1alpha1.AnnotationTraceParent)
		delete(ann, v1alpha1.AnnotationTraceStart)
		return
	}
	ann[v1alpha1.AnnotationTraceParent] = a.TraceParent()
	ann[v1alpha1.AnnotationTraceStart] = a.Start.UTC().Format(time.RFC3339Nano)
}

// AttemptOf reads the attempt's trace from the annotations of a job or a
// member pod.
func AttemptOf(ann map[string]string) (Attempt, bool) {
	sc, ok := ParseTraceParent(ann[v1alpha1.AnnotationTraceParent])
	if !ok {
		return Attempt{}, false
	}
	a := Attempt{Root: sc}
	if t, err := time.Parse(time.RFC3339Nano, ann[v1alpha1.AnnotationTraceStart]); err == nil {
		a.Start = t
	}
	return a, true
}

// ParseTraceParent parses a W3C traceparent.
func ParseTraceParent(s string) (trace.SpanContext, bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}
