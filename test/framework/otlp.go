// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"encoding/hex"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one span an OTLPReceiver received, with its resource's
// attributes.
type Span struct {
	// TraceID, SpanID and ParentID are hex; ParentID is "" for a root.
	TraceID, SpanID, ParentID string
	Name                      string
	// StartNano and EndNano are Unix nanoseconds.
	StartNano, EndNano uint64
	// Attrs and Resource are the span's and its resource's attributes, as
	// strings (ints in decimal, string slices joined with ",").
	Attrs, Resource map[string]string
	// Error is the status message of a span with status Error.
	Error  string
	Failed bool
}

// OTLPReceiver is an in-process OpenTelemetry collector: the OTLP/gRPC
// TraceService, without TLS, keeping every span it receives.
type OTLPReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Addr is the host:port to export to.
	Addr string

	mu    sync.Mutex
	spans []Span
}

// StartOTLPReceiver listens on a loopback port until the test ends.
func StartOTLPReceiver(t testing.TB) *OTLPReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &OTLPReceiver{Addr: l.Addr().String()}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, r)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return r
}

// Export stores the spans of a request.
func (r *OTLPReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentID: hex.EncodeToString(sp.GetParentSpanId()), Name: sp.GetName(),
					StartNano: sp.GetStartTimeUnixNano(), EndNano: sp.GetEndTimeUnixNano(),
					Attrs: attrMap(sp.GetAttributes()), Resource: res,
					Failed: sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, Error: sp.GetStatus().GetMessage()}
				got = append(got, s)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *OTLPReceiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace returns the spans received so far of one trace.
func (r *OTLPReceiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = anyString(kv.GetValue())
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, ",")
	}
	return v.String()
}
