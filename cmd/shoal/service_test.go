// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fakeServices answers the Inference calls from services (by name), each
// at revision rev, recording the requests.
type fakeServices struct {
	shoalv1.InferenceClient
	t        *testing.T
	services []*v1alpha1.InferenceService
	rev      int64
	err      error
	// conflicts is how many updates to refuse as Aborted, as if the
	// service changed between the read and the update.
	conflicts int

	created  *v1alpha1.InferenceService
	updated  *v1alpha1.InferenceService
	updates  []*shoalv1.InferenceServiceRequest
	listed   []string
	deleted  []string
	reported []*shoalv1.ReportServiceLoadRequest
}

func (f *fakeServices) object(s *v1alpha1.InferenceService) *shoalv1.Object {
	b, err := json.Marshal(s)
	if err != nil {
		f.t.Fatal(err)
	}
	return &shoalv1.Object{Json: b, Revision: f.rev}
}

func (f *fakeServices) find(name string) *v1alpha1.InferenceService {
	for _, s := range f.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// get is the named service, or NotFound.
func (f *fakeServices) get(name string) (*v1alpha1.InferenceService, error) {
	if s := f.find(name); s != nil {
		return s, nil
	}
	return nil, status.Errorf(codes.NotFound, "inference service %q not found", name)
}

func (f *fakeServices) decode(r *shoalv1.InferenceServiceRequest) *v1alpha1.InferenceService {
	s, err := v1alpha1.DecodeInferenceService(r.GetService().GetJson())
	if err != nil {
		f.t.Fatalf("sent a service the hub cannot decode: %v\n%s", err, r.GetService().GetJson())
	}
	return s
}

func (f *fakeServices) Create(_ context.Context, r *shoalv1.InferenceServiceRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	if f.err != nil {
		return nil, f.err
	}
	s := f.decode(r)
	f.created = s
	stored := s.DeepCopy()
	v1alpha1.SetInferenceServiceDefaults(stored)
	stored.Status.Owner = "alice"
	return f.object(stored), nil
}

func (f *fakeServices) Update(_ context.Context, r *shoalv1.InferenceServiceRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	f.updates = append(f.updates, r)
	if f.err != nil {
		return nil, f.err
	}
	s := f.decode(r)
	if f.conflicts > 0 {
		f.conflicts--
		f.rev++
	}
	if rev := r.GetService().GetRevision(); rev != 0 && rev != f.rev {
		return nil, status.Errorf(codes.Aborted, "inference service %q changed since revision %d (now %d); read it again", s.Name, rev, f.rev)
	}
	f.updated = s
	f.rev++
	return f.object(s), nil
}

func (f *fakeServices) Get(_ context.Context, r *shoalv1.GetInferenceServiceRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	s, err := f.get(r.Name)
	if err != nil {
		return nil, err
	}
	return f.object(s), nil
}

func (f *fakeServices) List(_ context.Context, r *shoalv1.ListInferenceServicesRequest, _ ...grpc.CallOption) (*shoalv1.ListInferenceServicesResponse, error) {
	f.listed = append(f.listed, r.Queue)
	out := &shoalv1.ListInferenceServicesResponse{}
	for _, s := range f.services {
		if r.Queue == "" || s.Spec.Queue == r.Queue {
			out.Items = append(out.Items, f.object(s))
		}
	}
	return out, nil
}

func (f *fakeServices) Delete(_ context.Context, r *shoalv1.GetInferenceServiceRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	s, err := f.get(r.Name)
	if err != nil {
		return nil, err
	}
	f.deleted = append(f.deleted, r.Name)
	return f.object(s), nil
}

func (f *fakeServices) ReportLoad(_ context.Context, r *shoalv1.ReportServiceLoadRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	f.reported = append(f.reported, r)
	s, err := f.get(r.Name)
	if err != nil {
		return nil, err
	}
	s = s.DeepCopy()
	s.Status.Load = &v1alpha1.ServiceLoad{Value: r.Value + 4, Sources: []v1alpha1.ServiceLoadSource{
		{Source: "user:alice", Value: r.Value}, {Source: "agent:eu-1", Value: 4}}}
	return f.object(s), nil
}

// runService runs `shoal service ARGS` against cl; a nil cl fails the test
// when the command dials the hub.
func runService(t *testing.T, cl shoalv1.InferenceClient, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newServiceCommand(func(*cobra.Command) (shoalv1.InferenceClient, func(), error) {
		if cl == nil {
			t.Fatalf("service %v dialed the hub; want a flag error first", args)
		}
		return cl, func() {}, nil
	}, nil)
	return execCommand(t, cmd, stdin, args...)
}

// sampleServices are chat (three replicas on two clusters, one not ready,
// a rollout from demo-llm@1.0 to demo-llm@1.1 in progress, load reported)
// and batch (fixed, one replica, nothing placed yet).
func sampleServices() []*v1alpha1.InferenceService {
	at := testTime
	meta := metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindInferenceService}
	tmpl := func(image string) (t v1alpha1.InferenceServiceSpec) {
		t.Template.Spec.Containers = append(t.Template.Spec.Containers, corev1.Container{Name: "server", Image: image})
		return t
	}
	chat := &v1alpha1.InferenceService{TypeMeta: meta,
		ObjectMeta: metav1.ObjectMeta{Name: "chat", CreationTimestamp: *at("2026-12-02T10:00:00Z")},
		Spec:       tmpl("shoal.local/trainer:dev")}
	chat.Spec.Queue, chat.Spec.Model = "research/nlp", "demo-llm@1.1"
	chat.Spec.Replicas = v1alpha1.ServiceReplicas{Min: 1, Max: 4}
	chat.Spec.Autoscaling = &v1alpha1.ServiceAutoscaling{TargetPerReplica: 10}
	v1alpha1.SetInferenceServiceDefaults(chat)
	chat.Status = v1alpha1.InferenceServiceStatus{Owner: "alice", Model: "demo-llm@1.0", Revision: "r1",
		DesiredReplicas: 2, Replicas: 3, ReadyReplicas: 2,
		Load: &v1alpha1.ServiceLoad{Value: 17, Sources: []v1alpha1.ServiceLoadSource{
			{Source: "user:gateway", Value: 17, Time: *at("2026-12-02T11:59:50Z")}}},
		LastScaleTime: at("2026-12-02T11:00:00Z"),
		Rollout: &v1alpha1.ServiceRolloutStatus{From: "demo-llm@1.0", To: "demo-llm@1.1", Revision: "r2",
			Phase: v1alpha1.ServiceRolloutProgressing, StartTime: at("2026-12-02T11:58:00Z"),
			ProgressTime: at("2026-12-02T11:58:00Z"), Message: "rolling out demo-llm@1.1 over demo-llm@1.0"},
		Endpoints: []v1alpha1.ServiceEndpoint{
			{Replica: "chat-a1b2c", Revision: "r1", Model: "demo-llm@1.0", Cluster: "eu-1", Address: "10.0.0.5", Port: 8000, Ready: true},
			{Replica: "chat-d3e4f", Revision: "r1", Model: "demo-llm@1.0", Cluster: "us-1", Address: "10.1.0.7", Port: 8000, Ready: true},
			{Replica: "chat-g5h6i", Revision: "r2", Model: "demo-llm@1.1", Cluster: "eu-1"},
		},
		Conditions: []metav1.Condition{{Type: v1alpha1.ServiceConditionReady, Status: metav1.ConditionTrue, Reason: "MinReady",
			LastTransitionTime: *at("2026-12-02T10:05:00Z")}},
	}
	batch := &v1alpha1.InferenceService{TypeMeta: meta,
		ObjectMeta: metav1.ObjectMeta{Name: "batch", CreationTimestamp: *at("2026-12-02T11:00:00Z")},
		Spec:       tmpl("my/server:1")}
	batch.Spec.Queue, batch.Spec.Model = "research/cv", "base@0.1"
	batch.Spec.Replicas = v1alpha1.ServiceReplicas{Min: 1}
	v1alpha1.SetInferenceServiceDefaults(batch)
	batch.Status = v1alpha1.InferenceServiceStatus{Owner: "bob", DesiredReplicas: 1, Replicas: 1}
	return []*v1alpha1.InferenceService{chat, batch}
}

func TestServiceTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := printServiceTable(&b, sampleServices(), false, now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME    QUEUE          MODEL                         READY   LOAD   AGE\n" +
		"chat    research/nlp   demo-llm@1.0 → demo-llm@1.1   2/2     17     120m\n" +
		"batch   research/cv    -                             0/1     -      60m\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printServiceTable(&b, sampleServices(), true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(lines[0], "AGE    MIN   MAX   CLUSTERS") || !strings.HasSuffix(lines[1], "120m   1     4     eu-1,us-1") ||
		!strings.HasSuffix(lines[2], "60m    1     1     -") {
		t.Fatalf("wide table:\n%s", b.String())
	}

	// a finished rollout shows only the model served
	s := sampleServices()[0]
	s.Status.Model, s.Status.Rollout.Phase = "demo-llm@1.1", v1alpha1.ServiceRolloutComplete
	if got := serviceModel(s); got != "demo-llm@1.1" {
		t.Fatalf("model after the rollout: %q", got)
	}
}

func TestServiceGetAndList(t *testing.T) {
	cl := &fakeServices{t: t, services: sampleServices(), rev: 7}
	out, err := runService(t, cl, "", "get", "chat")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME ") ||
		!strings.HasPrefix(lines[1], "chat ") || !strings.Contains(lines[1], " 2/2 ") {
		t.Fatalf("get:\n%s", out)
	}
	out, err = runService(t, cl, "", "get", "chat", "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: InferenceService") || !strings.Contains(out, "model: demo-llm@1.1") {
		t.Fatalf("get -o yaml: %v\n%s", err, out)
	}
	out, err = runService(t, cl, "", "get", "chat", "batch", "-o", "json")
	var list struct {
		Kind  string
		Items []v1alpha1.InferenceService
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Fatalf("get two -o json: %v\n%s", err, out)
	}
	if _, err := runService(t, cl, "", "get", "gone"); err == nil ||
		!strings.Contains(err.Error(), `get inferenceservice/gone: inference service "gone" not found`) {
		t.Fatalf("get missing: %v", err)
	}

	out, err = runService(t, cl, "", "list", "--queue", "research/cv")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "batch ") ||
		cl.listed[len(cl.listed)-1] != "research/cv" {
		t.Fatalf("list --queue (asked for %q):\n%s", cl.listed, out)
	}
	out, err = runService(t, cl, "", "ls", "-o", "wide")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, "CLUSTERS") {
		t.Fatalf("list -o wide: %v\n%s", err, out)
	}
	out, err = runService(t, cl, "", "list", "--queue", "ops")
	if err != nil || out != "No inference services found in queue ops: create one with `shoal service create -f`.\n" {
		t.Fatalf("empty list: %v %q", err, out)
	}
	if _, err := runService(t, nil, "", "list", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "unknown output format") {
		t.Fatalf("list -o xml: %v", err)
	}
}

func TestServiceDescribe(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := describeService(&b, sampleServices()[0], now); err != nil {
		t.Fatal(err)
	}
	// columns are compared with single spaces
	squeeze := func(s string) string { return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ") }
	out := squeeze(b.String())
	for _, want := range []string{
		"Name: chat\n",
		"Model: demo-llm@1.1\n",
		"Replicas: min 1, max 4; 1 member(s) of 1 GPU(s) each\n",
		"Placement: SpreadClusters, topology -\n",
		"Autoscaling: 10 per replica, scale down after 60s\n",
		"Container server: shoal.local/trainer:dev\n",
		"Serving: demo-llm@1.0 (revision r1)\n",
		"Ready: 2/2 (3 replica jobs running)\n",
		"Load: 17 (1 source(s))\n",
		"Load sources:\n SOURCE VALUE AGE\n user:gateway 17 10s\n",
		"Rollout:\n Model: demo-llm@1.0 → demo-llm@1.1 (revision r2)\n Phase: Progressing\n Started: 2m ago\n",
		"Conditions:\n TYPE STATUS REASON AGE MESSAGE\n Ready True MinReady 115m \n",
		"Endpoints:\n REPLICA CLUSTER ADDRESS:PORT MODEL READY\n" +
			" chat-a1b2c eu-1 10.0.0.5:8000 demo-llm@1.0 true\n" +
			" chat-d3e4f us-1 10.1.0.7:8000 demo-llm@1.0 true\n" +
			" chat-g5h6i eu-1 - demo-llm@1.1 false\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}

	b.Reset()
	if err := describeService(&b, sampleServices()[1], now); err != nil {
		t.Fatal(err)
	}
	out = squeeze(b.String())
	for _, want := range []string{"Autoscaling: off (min replicas)\n", "Serving: - (revision -)\n", "Load: <none reported>\nRollout:\n <none>\n",
		"Conditions:\n <none>\n", "Endpoints:\n <none yet: no replica is placed>\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe of a new service lacks %q:\n%s", want, b.String())
		}
	}

	cl := &fakeServices{t: t, services: sampleServices()}
	if out, err := runService(t, cl, "", "describe", "chat"); err != nil || !strings.HasPrefix(out, "Name:") {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	if _, err := runService(t, cl, "", "describe", "gone"); err == nil || !strings.Contains(err.Error(), "describe inferenceservice/gone: ") {
		t.Fatalf("describe missing: %v", err)
	}
}

func TestServiceEndpoints(t *testing.T) {
	cl := &fakeServices{t: t, services: sampleServices()}
	out, err := runService(t, cl, "", "endpoints", "chat", "--ready")
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"REPLICA      CLUSTER   ADDRESS:PORT    MODEL          READY\n" +
		"chat-a1b2c   eu-1      10.0.0.5:8000   demo-llm@1.0   true\n" +
		"chat-d3e4f   us-1      10.1.0.7:8000   demo-llm@1.0   true\n"
	if out != want {
		t.Fatalf("endpoints --ready:\n%s\nwant:\n%s", out, want)
	}
	out, err = runService(t, cl, "", "endpoints", "chat", "-o", "json")
	var eps []v1alpha1.ServiceEndpoint
	if err != nil || json.Unmarshal([]byte(out), &eps) != nil || !reflect.DeepEqual(eps, sampleServices()[0].Status.Endpoints) {
		t.Fatalf("endpoints -o json: %v\n%s", err, out)
	}
	out, err = runService(t, cl, "", "endpoints", "chat", "-o", "wide")
	if err != nil || !strings.Contains(out, "READY   REVISION\n") || !strings.Contains(out, "false   r2\n") {
		t.Fatalf("endpoints -o wide: %v\n%s", err, out)
	}
	out, err = runService(t, cl, "", "endpoints", "batch", "--ready", "-o", "json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("no endpoints -o json: %v %q", err, out)
	}
	out, err = runService(t, cl, "", "endpoints", "batch", "--ready")
	if err != nil || out != "No ready endpoints of inferenceservice/batch yet (0 of 1 replicas ready).\n" {
		t.Fatalf("no endpoints: %v %q", err, out)
	}
	// an IPv6 address is bracketed
	var b bytes.Buffer
	if err := printServiceEndpoints(&b, "", []v1alpha1.ServiceEndpoint{{Replica: "r", Address: "fd00::5", Port: 8000}}, false); err != nil ||
		!strings.Contains(b.String(), "[fd00::5]:8000") {
		t.Fatalf("IPv6: %v\n%s", err, b.String())
	}
}

func TestServiceCreateAndUpdate(t *testing.T) {
	cl := &fakeServices{t: t, rev: 3}
	out, err := runService(t, cl, "", "create", "-f", "../../examples/inference-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != "inferenceservice/demo-chat created\n" {
		t.Fatalf("printed %q", out)
	}
	s := cl.created
	if s.Spec.Queue == "" || s.Spec.Model != "demo-llm@1.0" || s.Spec.Replicas != (v1alpha1.ServiceReplicas{Min: 1, Max: 4}) ||
		s.Spec.Autoscaling == nil || s.Spec.Autoscaling.TargetPerReplica != 10 || s.Spec.Port != 8000 ||
		s.Spec.Template.Spec.Containers[0].Image != "shoal.local/trainer:dev" {
		t.Fatalf("created %+v", s.Spec)
	}

	in, err := os.ReadFile("../../examples/inference-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = runService(t, cl, string(in), "create", "-f", "-", "-o", "json")
	var got v1alpha1.InferenceService
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Status.Owner != "alice" || got.Spec.Members != 1 {
		t.Fatalf("create -o json: %v\n%s", err, out)
	}

	// update: the file's spec, the revision given (or 0)
	out, err = runService(t, cl, string(in), "update", "-f", "-", "--revision", "3")
	if err != nil || out != "inferenceservice/demo-chat updated\n" {
		t.Fatalf("update: %v %q", err, out)
	}
	if r := cl.updates[0]; r.Name != "demo-chat" || r.Service.Revision != 3 {
		t.Fatalf("update sent name %q revision %d", r.Name, r.Service.Revision)
	}
	if _, err := runService(t, cl, string(in), "update", "-f", "-"); err != nil || cl.updates[1].Service.Revision != 0 {
		t.Fatalf("update without --revision: %v, sent %d", err, cl.updates[1].Service.Revision)
	}
	if _, err := runService(t, cl, string(in), "update", "-f", "-", "--revision", "3"); err == nil ||
		!strings.Contains(err.Error(), "update inferenceservice/demo-chat: inference service \"demo-chat\" changed since revision 3") ||
		!strings.Contains(err.Error(), "(it changed meanwhile: get it again and reapply your change)") {
		t.Fatalf("stale update: %v", err)
	}

	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no file", "", []string{"create"}, `required flag(s) "filename" not set`},
		{"empty file", "", []string{"create", "-f", ""}, "-f needs a file"},
		{"argument", "", []string{"create", "chat", "-f", "-"}, "unknown command"},
		{"another kind", "apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n", []string{"create", "-f", "-"}, "expected kind InferenceService"},
		{"misspelt", strings.Replace(string(in), "targetPerReplica", "target", 1), []string{"create", "-f", "-"}, `unknown field "spec.autoscaling.target"`},
		{"no name", strings.Replace(string(in), "name: demo-chat", "labels: {}", 1), []string{"update", "-f", "-"}, "has no metadata.name"},
		{"negative revision", string(in), []string{"update", "-f", "-", "--revision", "-1"}, "--revision -1: must be a store revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runService(t, nil, tc.stdin, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}

	refused := &fakeServices{t: t, err: status.Error(codes.FailedPrecondition, "spec.model: model version demo-llm@1.0 is not registered")}
	if _, err := runService(t, refused, string(in), "create", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "create inferenceservice/demo-chat: spec.model: model version demo-llm@1.0 is not registered") {
		t.Fatalf("refused create: %v", err)
	}
}

func TestServiceSetModelAndScale(t *testing.T) {
	cl := &fakeServices{t: t, services: sampleServices(), rev: 12}
	out, err := runService(t, cl, "", "set-model", "batch", "base@0.2")
	if err != nil {
		t.Fatal(err)
	}
	if out != "inferenceservice/batch model set: base@0.1 → base@0.2 (rolling out; `shoal service describe batch` follows it)\n" {
		t.Fatalf("printed %q", out)
	}
	if r := cl.updates[0]; r.Name != "batch" || r.Service.Revision != 12 || cl.updated.Spec.Model != "base@0.2" ||
		cl.updated.Spec.Replicas != sampleServices()[1].Spec.Replicas {
		t.Fatalf("set-model sent revision %d, spec %+v", r.Service.Revision, cl.updated.Spec)
	}
	out, err = runService(t, cl, "", "set-model", "batch", "base@0.1")
	if err != nil || out != "inferenceservice/batch unchanged (spec.model is already base@0.1)\n" || len(cl.updates) != 1 {
		t.Fatalf("set-model to the same: %v %q (%d updates)", err, out, len(cl.updates))
	}
	// the service changes between the read and the update: read it again,
	// up to changeAttempts times
	cl.conflicts = 2
	if _, err := runService(t, cl, "", "set-model", "batch", "base@0.3"); err != nil || cl.updated.Spec.Model != "base@0.3" {
		t.Fatalf("set-model after 2 conflicts: %v, sent %s", err, cl.updated.Spec.Model)
	}
	cl.conflicts = changeAttempts
	if _, err := runService(t, cl, "", "set-model", "batch", "base@0.4"); err == nil ||
		!strings.Contains(err.Error(), `update inferenceservice/batch: inference service "batch" changed since revision`) {
		t.Fatalf("set-model after %d conflicts: %v", changeAttempts, err)
	}
	if _, err := runService(t, nil, "", "set-model", "batch", "base"); err == nil || !strings.Contains(err.Error(), `"base" is not MODEL@VERSION`) {
		t.Fatalf("set-model without a version: %v", err)
	}
	if _, err := runService(t, cl, "", "set-model", "gone", "base@0.2"); err == nil || !strings.Contains(err.Error(), "get inferenceservice/gone: ") {
		t.Fatalf("set-model of a missing service: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want v1alpha1.ServiceReplicas
		line string
	}{
		// chat autoscales (min 1, max 4): --min keeps max while it is at least min
		{"min under max", []string{"chat", "--min", "2"}, v1alpha1.ServiceReplicas{Min: 2, Max: 4}, "inferenceservice/chat scaled (replicas min 2, max 4)\n"},
		{"min over max", []string{"chat", "--min", "6"}, v1alpha1.ServiceReplicas{Min: 6, Max: 6}, ""},
		{"max alone", []string{"chat", "--max", "8"}, v1alpha1.ServiceReplicas{Min: 1, Max: 8}, ""},
		{"both", []string{"chat", "--min", "0", "--max", "2"}, v1alpha1.ServiceReplicas{Min: 0, Max: 2}, ""},
		// batch does not: max follows min
		{"fixed", []string{"batch", "--min", "3"}, v1alpha1.ServiceReplicas{Min: 3, Max: 3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(cl.updates)
			out, err := runService(t, cl, "", append([]string{"scale"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if len(cl.updates) != n+1 || cl.updates[n].Service.Revision != cl.rev-1 || cl.updated.Spec.Replicas != tc.want {
				t.Fatalf("sent %+v (revision %d), want %+v", cl.updated.Spec.Replicas, cl.updates[len(cl.updates)-1].Service.Revision, tc.want)
			}
			if tc.line != "" && out != tc.line {
				t.Fatalf("printed %q", out)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scale", "chat"}, "nothing to change: give --min, --max or both"},
		{[]string{"scale", "chat", "--min", "-1"}, "--min -1: must be 0 or more"},
		{[]string{"scale", "chat", "--max", "0"}, "--max 0: must be at least 1"},
		{[]string{"scale", "chat", "--min", "3", "--max", "2"}, "--max 2 is below --min 3"},
		{[]string{"scale", "--min", "1"}, "accepts 1 arg(s)"},
	} {
		if _, err := runService(t, nil, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want mention of %q", tc.args, err, tc.want)
		}
	}
}

func TestServiceLoadAndDelete(t *testing.T) {
	cl := &fakeServices{t: t, services: sampleServices()}
	out, err := runService(t, cl, "", "load", "chat", "42")
	if err != nil {
		t.Fatal(err)
	}
	if r := cl.reported[0]; r.Name != "chat" || r.Value != 42 {
		t.Fatalf("reported %+v", r)
	}
	if out != "inferenceservice/chat load 42 reported (load now 46 from 2 source(s))\n" {
		t.Fatalf("printed %q", out)
	}
	for _, v := range []string{"-1", "lots", "1.5"} {
		if _, err := runService(t, nil, "", "load", "chat", "--", v); err == nil || !strings.Contains(err.Error(), "must be a whole number, 0 or more") {
			t.Errorf("load %s: %v", v, err)
		}
	}

	out, err = runService(t, cl, "", "delete", "chat", "batch")
	if err != nil || out != "inferenceservice/chat deleted (its replicas are cancelled)\ninferenceservice/batch deleted (its replicas are cancelled)\n" ||
		!reflect.DeepEqual(cl.deleted, []string{"chat", "batch"}) {
		t.Fatalf("delete: %v %q %v", err, out, cl.deleted)
	}
	if _, err := runService(t, cl, "", "delete", "gone"); err == nil || !strings.Contains(err.Error(), "delete inferenceservice/gone: ") {
		t.Fatalf("delete missing: %v", err)
	}
}

func TestServiceCompletion(t *testing.T) {
	cl := &fakeServices{t: t, services: sampleServices()}
	dial := func(*cobra.Command) (shoalv1.InferenceClient, func(), error) { return cl, func() {}, nil }
	cmd := &cobra.Command{}
	cmd.SetContext(t.Context())
	names, dir := completeServiceNames(dial, true)(cmd, []string{"chat"}, "b")
	if !reflect.DeepEqual(names, []string{"batch"}) || dir != cobra.ShellCompDirectiveNoFileComp {
		t.Fatalf("completed %v, %v", names, dir)
	}
	if names, _ := completeServiceNames(dial, false)(cmd, []string{"chat"}, ""); names != nil {
		t.Fatalf("completed a second argument: %v", names)
	}
	models := &fakeModels{t: t, versions: sampleModelVersions()}
	svc := newServiceCommand(dial, func(*cobra.Command) (shoalv1.ModelsClient, func(), error) { return models, func() {}, nil })
	setModel, _, err := svc.Find([]string{"set-model"})
	if err != nil {
		t.Fatal(err)
	}
	setModel.SetContext(t.Context())
	if names, _ := setModel.ValidArgsFunction(setModel, []string{"chat"}, "llama@"); !reflect.DeepEqual(names, []string{"llama@1.0"}) {
		t.Fatalf("set-model completed the model with %v", names)
	}
	if names, _ := setModel.ValidArgsFunction(setModel, nil, "c"); !reflect.DeepEqual(names, []string{"chat"}) {
		t.Fatalf("set-model completed the service with %v", names)
	}
}
