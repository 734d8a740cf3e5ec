// SPDX-License-Identifier: Apache-2.0

package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func record(t *testing.T, ratio float64) *tracetest.InMemoryExporter {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	stop := install(sdktrace.WithSyncer(mem), resource.Empty(), ratio)
	t.Cleanup(func() { _ = stop(context.Background()) })
	return mem
}

func TestAttemptSpansJoinOneTree(t *testing.T) {
	if NewAttempt(time.Now()).Valid() {
		t.Fatal("an attempt minted without tracing")
	}
	mem := record(t, 1)
	start := time.Now().Add(-time.Second)
	a := NewAttempt(start)
	if !a.Valid() || !a.Root.IsSampled() {
		t.Fatalf("attempt %+v: want valid and sampled at ratio 1", a)
	}
	// Stored on a job, read back from it and from a member pod.
	ann := map[string]string{}
	a.Annotate(ann)
	if !strings.HasPrefix(ann[v1alpha1.AnnotationTraceParent], "00-"+a.Root.TraceID().String()+"-"+a.Root.SpanID().String()+"-01") {
		t.Fatalf("traceparent %q", ann[v1alpha1.AnnotationTraceParent])
	}
	job, ok := AttemptOf(ann)
	if !ok || !job.Start.Equal(start) || job.Root.TraceID() != a.Root.TraceID() {
		t.Fatalf("read back %+v, %v; want %+v", job, ok, a)
	}
	pod, _ := AttemptOf(map[string]string{v1alpha1.AnnotationTraceParent: ann[v1alpha1.AnnotationTraceParent]})

	// The children first, in other processes' order: their parents' ids are known before.
	pod.EmitUnder(context.Background(), PhasePrepare, Span{Name: MemberPrepare, Start: start, End: time.Now()})
	job.EmitPhase(context.Background(), "", Span{Name: PhasePrepare, Start: start, End: time.Now()})
	job.EmitPhase(context.Background(), PhaseSchedule, Span{Name: PhaseDecide, Start: start, End: time.Now()})
	job.EmitRoot(context.Background(), Span{End: time.Now(), Error: "Aborting: x"})

	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range mem.GetSpans().Snapshots() {
		got[s.Name()] = s
	}
	if len(got) != 4 {
		t.Fatalf("spans %v, want 4", got)
	}
	for name, s := range got {
		if s.SpanContext().TraceID() != a.Root.TraceID() {
			t.Errorf("%s: trace %s, want %s", name, s.SpanContext().TraceID(), a.Root.TraceID())
		}
	}
	tid := a.Root.TraceID()
	root := got[SpanAttempt]
	if root.SpanContext().SpanID() != a.Root.SpanID() || root.Parent().IsValid() || !root.StartTime().Equal(start) ||
		root.Status().Description != "Aborting: x" {
		t.Errorf("root: id %s parent %v start %v status %+v; want %s, none, %v, the error",
			root.SpanContext().SpanID(), root.Parent(), root.StartTime(), root.Status(), a.Root.SpanID(), start)
	}
	for _, c := range []struct{ name, parent string }{
		{PhasePrepare, SpanAttempt}, {MemberPrepare, PhasePrepare}, {PhaseDecide, PhaseSchedule},
	} {
		want := a.Root.SpanID()
		if c.parent != SpanAttempt {
			want = PhaseSpanID(tid, c.parent)
		}
		if p := got[c.name].Parent().SpanID(); p != want {
			t.Errorf("%s: parent %s, want %s (%s)", c.name, p, want, c.parent)
		}
	}
	if id := got[PhasePrepare].SpanContext().SpanID(); id != PhaseSpanID(tid, PhasePrepare) {
		t.Errorf("prepare: id %s, want the derived %s", id, PhaseSpanID(tid, PhasePrepare))
	}
	if got[MemberPrepare].SpanContext().SpanID() == PhaseSpanID(tid, MemberPrepare) {
		t.Error("a member span got a derived id")
	}
}

func TestUnsampledAttemptEmitsNothing(t *testing.T) {
	mem := record(t, 0)
	a := NewAttempt(time.Now())
	if !a.Valid() || a.Root.IsSampled() {
		t.Fatalf("attempt %+v: want valid and not sampled at ratio 0", a)
	}
	a.EmitRoot(context.Background(), Span{End: time.Now()})
	a.EmitPhase(context.Background(), "", Span{Name: PhaseBook, Start: time.Now(), End: time.Now()})
	a.EmitUnder(context.Background(), PhaseRunning, Span{Name: MemberRunning, Start: time.Now(), End: time.Now()})
	if n := len(mem.GetSpans()); n != 0 {
		t.Errorf("%d spans of an unsampled attempt", n)
	}
	ann := map[string]string{v1alpha1.AnnotationTraceParent: "x", v1alpha1.AnnotationTraceStart: "y"}
	Attempt{}.Annotate(ann)
	if len(ann) != 0 {
		t.Errorf("the zero attempt left %v", ann)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{SamplingRatio: 1.5}, "--tracing-sampling-ratio"},
		{Options{SamplingRatio: 1, Insecure: true}, "need --tracing-endpoint"},
		{Options{SamplingRatio: 1, Endpoint: "c:4317", Insecure: true, CAFile: "ca.pem"}, "exclude each other"},
		{Options{SamplingRatio: 0.1, Endpoint: "c:4317"}, ""},
	} {
		err := c.o.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
