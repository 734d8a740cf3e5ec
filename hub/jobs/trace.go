// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// traceSubmit emits the submit span of j's first attempt, linked to the
// span of the API call that submitted it.
func traceSubmit(ctx context.Context, j *v1alpha1.Job, start time.Time) {
	a, ok := tracing.AttemptOf(j.Annotations)
	if !ok {
		return
	}
	var links []trace.Link
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		links = append(links, trace.Link{SpanContext: sc})
	}
	a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhaseSubmit, Start: start, End: time.Now(), Links: links,
		Attrs: Attrs(j)})
}

// Attrs are the span attributes of j: job and queue (callers add the
// attempt's epoch once it is booked).
func Attrs(j *v1alpha1.Job) []attribute.KeyValue {
	return []attribute.KeyValue{tracing.KeyJob.String(j.Name), tracing.KeyQueue.String(j.Spec.Queue)}
}
