// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/shoal-dev/shoal/internal/tracing"
)

// metadataCarrier reads the W3C trace context a client sent in the
// request's metadata.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(k string) string {
	if v := metadata.MD(c).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c metadataCarrier) Set(k, v string) { metadata.MD(c).Set(k, v) }
func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// startRPCSpan starts the server span of a call (its parent is the
// client's traceparent, if it sent one); the call's span context is then
// in ctx, so that hub/jobs links a submitted job's attempt to it.
func startRPCSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = propagation.TraceContext{}.Extract(ctx, metadataCarrier(md))
	}
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return otel.Tracer("github.com/shoal-dev/shoal/hub/server").Start(ctx, strings.TrimPrefix(method, "/"),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("rpc.system", "grpc"),
			attribute.String("rpc.service", service), attribute.String("rpc.method", name)))
}

// endRPCSpan records the call's gRPC status code and ends its span.
func endRPCSpan(span trace.Span, err error) {
	st := status.Convert(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(st.Code())))
	if err != nil {
		span.SetStatus(codes.Error, st.Code().String())
	}
	span.End()
}

// traceUnary is the server span of a unary call; it runs outermost, so the
// span covers authentication and the mapping of errors to codes.
func traceUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !tracing.Enabled() {
		return handler(ctx, req)
	}
	ctx, span := startRPCSpan(ctx, info.FullMethod)
	resp, err := handler(ctx, req)
	endRPCSpan(span, err)
	return resp, err
}

// traceStream is the server span of a stream, for its whole life.
func traceStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !tracing.Enabled() {
		return handler(srv, ss)
	}
	ctx, span := startRPCSpan(ss.Context(), info.FullMethod)
	err := handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	endRPCSpan(span, err)
	return err
}
