// SPDX-License-Identifier: Apache-2.0

// Package tracing is Shoal's OpenTelemetry tracing: the daemons' flags
// (--tracing-endpoint, an OTLP/gRPC collector, off by default), the tracer
// provider they install, and the one trace per job attempt that the hub
// and the agents write into from several processes.
//
// A job attempt's trace context is minted by hub/jobs when the attempt
// starts (at submit, and again at each requeue) and stored on the Job as
// the W3C traceparent annotation v1alpha1.AnnotationTraceParent, with the
// attempt's start time (v1alpha1.AnnotationTraceStart). Its span id is the
// id of the attempt's root span. Every part that takes the job a step
// further emits its span when the step is done, with the start and end
// times it measured, under that trace: the scheduler's schedule and book,
// the dispatcher's prepare, commit and running, and the root itself once
// the attempt runs or ends. The dispatcher copies the traceparent onto the
// member pods, so each agent emits its members' prepare, commit and
// running spans under the hub's spans of the same phase.
//
// The hub's phase spans have ids derived from the trace id and the phase
// name (PhaseSpanID), so a child can name its parent before the parent is
// emitted, in another process, and a phase emitted twice (by two replicas
// in turn) keeps one id.
package tracing
