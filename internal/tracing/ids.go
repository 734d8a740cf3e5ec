// SPDX-License-Identifier: Apache-2.0

package tracing

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// forced are the ids (and sampling decision) a span emitted afterwards
// must have: a job attempt's root, whose ids were minted when the attempt
// started, and the hub's phase spans, whose ids are derived.
type forced struct {
	traceID trace.TraceID // zero for a span with a parent
	spanID  trace.SpanID
	sampled bool
}

type forcedKey struct{}

func withForced(ctx context.Context, f forced) context.Context {
	return context.WithValue(ctx, forcedKey{}, f)
}

func forcedOf(ctx context.Context) (forced, bool) {
	f, ok := ctx.Value(forcedKey{}).(forced)
	return f, ok
}

// idGenerator is the SDK's random generator, except for spans emitted with
// forced ids.
type idGenerator struct{}

// NewIDs returns the ids of a root span.
func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := forcedOf(ctx); ok && f.traceID.IsValid() {
		return f.traceID, f.spanID
	}
	return randomTraceID(), randomSpanID()
}

// NewSpanID returns the id of a span with a parent.
func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := forcedOf(ctx); ok && f.spanID.IsValid() {
		return f.spanID
	}
	return randomSpanID()
}

// sampler keeps a forced root's decision (taken when its attempt started)
// and otherwise follows ratio.
type sampler struct{ ratio sdktrace.Sampler }

// ShouldSample decides whether the span is recorded and exported.
func (s sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if f, ok := forcedOf(p.ParentContext); ok && f.traceID.IsValid() {
		d := sdktrace.Drop
		if f.sampled {
			d = sdktrace.RecordAndSample
		}
		return sdktrace.SamplingResult{Decision: d}
	}
	return s.ratio.ShouldSample(p)
}

// Description names the sampler.
func (s sampler) Description() string { return "ShoalAttempt{" + s.ratio.Description() + "}" }

// PhaseSpanID is the id of the hub's span of phase in the attempt traced
// by tid: the first 8 bytes of SHA-256(trace id, phase), never zero.
func PhaseSpanID(tid trace.TraceID, phase string) trace.SpanID {
	h := sha256.New()
	h.Write(tid[:])
	h.Write([]byte(phase))
	var id trace.SpanID
	copy(id[:], h.Sum(nil))
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

func randomTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		if _, err := crand.Read(id[:]); err != nil {
			binary.BigEndian.PutUint64(id[:8], rand.Uint64())
			binary.BigEndian.PutUint64(id[8:], rand.Uint64())
		}
	}
	return id
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
