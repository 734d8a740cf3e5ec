// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/tracing"
)

type cycleStartKey struct{}

func withCycleStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, cycleStartKey{}, t)
}

// traceBooking emits the scheduling spans of a job attempt the cycle
// booked: schedule (the attempt's start to the decision) with its queue
// wait (to the cycle's start) and decision (the cycle's read and placement
// run), and book (the booking transaction, from booking to now).
func traceBooking(ctx context.Context, it store.Item[*v1alpha1.Job], p *placement.Placement, decided, booking time.Time, waiting int) {
	if it.Object == nil || !tracing.Enabled() {
		return
	}
	a, ok := tracing.AttemptOf(it.Object.Annotations)
	if !ok {
		return
	}
	start, _ := ctx.Value(cycleStartKey{}).(time.Time)
	if start.IsZero() {
		start = decided
	}
	attempt := a.Start
	if attempt.IsZero() || attempt.After(start) {
		attempt = start
	}
	attrs := append(jobs.Attrs(it.Object), tracing.KeyEpoch.Int64(it.Object.Status.Epoch+1),
		tracing.KeyClusters.StringSlice(p.Clusters))
	sched := slices.Clone(attrs)
	if p.Level != "" {
		sched = append(sched, attribute.String("shoal.level", string(p.Level)), attribute.String("shoal.domain", p.Domain))
	}
	a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhaseSchedule, Start: attempt, End: decided, Attrs: sched})
	a.EmitPhase(ctx, tracing.PhaseSchedule, tracing.Span{Name: tracing.PhaseQueueWait, Start: attempt, End: start, Attrs: attrs})
	a.EmitPhase(ctx, tracing.PhaseSchedule, tracing.Span{Name: tracing.PhaseDecide, Start: start, End: decided,
		Attrs: append(attrs, attribute.Int("shoal.cycle.waiting", waiting))})
	a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhaseBook, Start: booking, End: time.Now(),
		Attrs: attrs})
}
