// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const (
	testDigest1 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testDigest2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// fakeModels answers the Models calls from versions (by name), recording
// the requests; register's answer is what it was sent, with result in the
// SubmitResultHeader.
type fakeModels struct {
	shoalv1.ModelsClient
	t        *testing.T
	versions []*v1alpha1.ModelVersion
	result   string
	err      error

	registered *v1alpha1.ModelVersion
	listed     []string
}

func (f *fakeModels) object(m *v1alpha1.ModelVersion) *shoalv1.Object {
	b, err := json.Marshal(m)
	if err != nil {
		f.t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}
}

func (f *fakeModels) Register(_ context.Context, r *shoalv1.RegisterModelVersionRequest, opts ...grpc.CallOption) (*shoalv1.Object, error) {
	if f.err != nil {
		return nil, f.err
	}
	m, err := v1alpha1.DecodeModelVersion(r.GetVersion().GetJson())
	if err != nil {
		f.t.Fatalf("register sent a version the hub cannot decode: %v\n%s", err, r.GetVersion().GetJson())
	}
	f.registered = m
	for _, o := range opts {
		if h, ok := o.(grpc.HeaderCallOption); ok && f.result != "" {
			*h.HeaderAddr = metadata.Pairs(v1alpha1.SubmitResultHeader, f.result)
		}
	}
	stored := m.DeepCopy()
	stored.Name = v1alpha1.ModelVersionName(m.Spec.Model, m.Spec.Version)
	stored.Status.RegisteredBy = "alice"
	return f.object(stored), nil
}

func (f *fakeModels) find(name string) *v1alpha1.ModelVersion {
	for _, m := range f.versions {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func (f *fakeModels) Get(_ context.Context, r *shoalv1.GetModelVersionRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	m := f.find(r.Name)
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "model version %q not found", r.Name)
	}
	return f.object(m), nil
}

func (f *fakeModels) List(_ context.Context, r *shoalv1.ListModelVersionsRequest, _ ...grpc.CallOption) (*shoalv1.ListModelVersionsResponse, error) {
	f.listed = append(f.listed, r.Model)
	out := &shoalv1.ListModelVersionsResponse{}
	for _, m := range f.versions {
		if r.Model == "" || m.Spec.Model == r.Model {
			out.Items = append(out.Items, f.object(m))
		}
	}
	return out, nil
}

func (f *fakeModels) Lineage(_ context.Context, r *shoalv1.GetModelVersionRequest, _ ...grpc.CallOption) (*shoalv1.ModelLineage, error) {
	out := &shoalv1.ModelLineage{}
	for name := r.Name; name != ""; {
		m := f.find(name)
		if m == nil {
			if len(out.Versions) == 0 {
				return nil, status.Errorf(codes.NotFound, "model version %q not found", r.Name)
			}
			break
		}
		out.Versions = append(out.Versions, f.object(m))
		name = m.Spec.Parent
	}
	return out, nil
}

// runModel runs `shoal model ARGS` against cl; a nil cl fails the test when
// the command dials the hub.
func runModel(t *testing.T, cl shoalv1.ModelsClient, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newModelCommand(func(*cobra.Command) (shoalv1.ModelsClient, func(), error) {
		if cl == nil {
			t.Fatalf("model %v dialed the hub; want a flag error first", args)
		}
		return cl, func() {}, nil
	})
	return execCommand(t, cmd, stdin, args...)
}

// execCommand runs cmd with args, reading stdin, and returns what it wrote
// (stdout and stderr together).
func execCommand(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// testTime is the RFC 3339 time s.
func testTime(s string) *metav1.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	mt := metav1.NewTime(tm)
	return &mt
}

// sampleModelVersions is llama-chat@2.0 (from a job's checkpoint, derived
// from llama@1.0) and llama@1.0 (from a job without a checkpoint), and
// base@0.1 (no source job).
func sampleModelVersions() []*v1alpha1.ModelVersion {
	at := testTime
	step := int64(1200)
	meta := metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindModelVersion}
	return []*v1alpha1.ModelVersion{
		{
			TypeMeta:   meta,
			ObjectMeta: metav1.ObjectMeta{Name: "llama-chat@2.0"},
			Spec: v1alpha1.ModelVersionSpec{Model: "llama-chat", Version: "2.0", ArtifactURI: "s3://models/llama-chat/2.0",
				Digest: testDigest1, Framework: "pytorch", Source: &v1alpha1.ModelSource{Job: "llama-sft", CheckpointStep: &step},
				Parent: "llama@1.0"},
			Status: v1alpha1.ModelVersionStatus{
				RegisteredAt: at("2026-12-02T10:00:00Z"), RegisteredBy: "alice",
				Job: &v1alpha1.ModelJobRecord{Name: "llama-sft", UID: "u1", Queue: "research/nlp", Owner: "alice", Phase: v1alpha1.JobPhase("Succeeded")},
				Checkpoint: &v1alpha1.JobCheckpoint{Step: 1200, URI: "s3://ckpt/sft/step-1200",
					Time: *at("2026-12-02T09:00:00Z"), ReportedAt: *at("2026-12-02T09:00:05Z"), Count: 4},
			},
		},
		{
			TypeMeta:   meta,
			ObjectMeta: metav1.ObjectMeta{Name: "llama@1.0"},
			Spec: v1alpha1.ModelVersionSpec{Model: "llama", Version: "1.0", ArtifactURI: "s3://models/llama/1.0",
				Digest: testDigest2, Framework: "pytorch", Source: &v1alpha1.ModelSource{Job: "llama-pretrain"}},
			Status: v1alpha1.ModelVersionStatus{
				RegisteredAt: at("2026-12-01T10:00:00Z"), RegisteredBy: "alice",
				Job: &v1alpha1.ModelJobRecord{Name: "llama-pretrain", UID: "u0", Queue: "research/nlp", Owner: "alice"},
			},
		},
		{
			TypeMeta:   meta,
			ObjectMeta: metav1.ObjectMeta{Name: "base@0.1"},
			Spec:       v1alpha1.ModelVersionSpec{Model: "base", Version: "0.1", ArtifactURI: "gs://b/base", Digest: testDigest2},
			Status: v1alpha1.ModelVersionStatus{
				RegisteredAt: at("2026-11-30T10:00:00Z"), RegisteredBy: "bob",
			},
		},
	}
}

func TestModelRegisterFlagErrors(t *testing.T) {
	full := []string{"--model", "llama", "--version", "1.0", "--artifact", "s3://m/1", "--digest", testDigest1}
	with := func(extra ...string) []string { return append(append([]string{"register"}, full...), extra...) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", []string{"register"}, "register needs -f FILE, or --model, --version, --artifact and --digest: missing --model, --version, --artifact, --digest"},
		{"no model", []string{"register", "--version", "1.0", "--artifact", "s3://m/1", "--digest", testDigest1}, "missing --model"},
		{"no artifact or digest", []string{"register", "--model", "llama", "--version", "1.0"}, "missing --artifact, --digest"},
		{"file and flags", []string{"register", "-f", "-", "--model", "llama", "--parent", "a@1"}, "give either -f FILE or the flags, not both (-f with --model, --parent)"},
		{"empty file", []string{"register", "-f", ""}, "-f needs a file"},
		{"step not a number", with("--job", "j", "--checkpoint-step", "late"), `invalid argument "late" for "--checkpoint-step"`},
		{"negative step", with("--job", "j", "--checkpoint-step", "-1"), "--checkpoint-step -1: must be 0 or more"},
		{"step without job", with("--checkpoint-step", "3"), "--checkpoint-step names a checkpoint of the source job: give --job too"},
		{"bad parent", with("--parent", "llama"), `--parent: "llama" is not MODEL@VERSION`},
		{"argument", append(with(), "llama@1.0"), "unknown command"},
		{"bad output", with("-o", "xml"), "unknown output format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runModel(t, nil, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestModelRegisterFromFlags(t *testing.T) {
	cl := &fakeModels{t: t, result: "created"}
	out, err := runModel(t, cl, "", "register", "--model", "llama-chat", "--version", "2.0", "--artifact", "s3://models/llama-chat/2.0",
		"--digest", testDigest1, "--framework", "pytorch", "--job", "llama-sft", "--checkpoint-step", "0", "--parent", "llama@1.0")
	if err != nil {
		t.Fatal(err)
	}
	step := int64(0)
	want := &v1alpha1.ModelVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindModelVersion},
		ObjectMeta: metav1.ObjectMeta{Name: "llama-chat@2.0"},
		Spec: v1alpha1.ModelVersionSpec{Model: "llama-chat", Version: "2.0", ArtifactURI: "s3://models/llama-chat/2.0",
			Digest: testDigest1, Framework: "pytorch", Source: &v1alpha1.ModelSource{Job: "llama-sft", CheckpointStep: &step},
			Parent: "llama@1.0"},
	}
	if !reflect.DeepEqual(cl.registered, want) {
		t.Fatalf("sent %+v\nwant %+v", cl.registered, want)
	}
	if out != "modelversion/llama-chat@2.0 registered\n" {
		t.Fatalf("printed %q", out)
	}
	if err := v1alpha1.ValidateModelVersion(cl.registered); err != nil {
		t.Fatalf("the flags made an invalid version: %v", err)
	}

	// no --job: no source; no --checkpoint-step: the job's latest
	cl.result = "existing"
	out, err = runModel(t, cl, "", "register", "--model", "llama", "--version", "1.0", "--artifact", "s3://models/llama/1.0",
		"--digest", testDigest2)
	if err != nil {
		t.Fatal(err)
	}
	if s := cl.registered.Spec; s.Source != nil || s.Framework != "" || s.Parent != "" {
		t.Fatalf("sent %+v", s)
	}
	if out != "modelversion/llama@1.0 unchanged (already registered with the same spec)\n" {
		t.Fatalf("printed %q", out)
	}
	if _, err = runModel(t, cl, "", "register", "--model", "llama", "--version", "1.1", "--artifact", "s3://m", "--digest", testDigest2,
		"--job", "llama-pretrain"); err != nil {
		t.Fatal(err)
	}
	if src := cl.registered.Spec.Source; src == nil || src.Job != "llama-pretrain" || src.CheckpointStep != nil {
		t.Fatalf("sent source %+v", src)
	}
}

func TestModelRegisterFromFile(t *testing.T) {
	cl := &fakeModels{t: t, result: "created"}
	in := `apiVersion: shoal.dev/v1alpha1
kind: ModelVersion
spec:
  model: llama
  version: "1.0"
  artifactURI: s3://models/llama/1.0
  digest: ` + testDigest2 + `
  source: {job: llama-pretrain, checkpointStep: 7}
`
	out, err := runModel(t, cl, in, "register", "-f", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if s := cl.registered.Spec; s.Model != "llama" || s.Version != "1.0" || s.Source == nil || *s.Source.CheckpointStep != 7 {
		t.Fatalf("sent %+v", s)
	}
	var got v1alpha1.ModelVersion
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Name != "llama@1.0" || got.Status.RegisteredBy != "alice" {
		t.Fatalf("-o json printed %+v, %v:\n%s", got, err, out)
	}

	// strict: a misspelt field; another kind
	for in, want := range map[string]string{
		strings.Replace(in, "artifactURI", "artifactUri", 1):                 `unknown field "spec.artifactUri"`,
		"apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n": "expected kind ModelVersion",
	} {
		if _, err := runModel(t, cl, in, "register", "-f", "-"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want mention of %q", err, want)
		}
	}
}

func TestModelRegisterHubRefusal(t *testing.T) {
	cl := &fakeModels{t: t, err: status.Error(codes.FailedPrecondition,
		`checkpoint step 1000 of job "llama-sft" is not its latest (1200); the hub keeps only the latest`)}
	_, err := runModel(t, cl, "", "register", "--model", "llama", "--version", "1.0", "--artifact", "s3://m", "--digest", testDigest1,
		"--job", "llama-sft", "--checkpoint-step", "1000")
	if err == nil || !strings.Contains(err.Error(), "register modelversion/llama@1.0: checkpoint step 1000") {
		t.Fatalf("err = %v", err)
	}
}

func TestModelGetAndListTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := printModelTable(&b, sampleModelVersions(), false, now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME             ARTIFACT                     DIGEST                FRAMEWORK   JOB              STEP   PARENT      AGE\n" +
		"llama-chat@2.0   s3://models/llama-chat/2.0   sha256:0123456789ab   pytorch     llama-sft        1200   llama@1.0   120m\n" +
		"llama@1.0        s3://models/llama/1.0        sha256:fedcba987654   pytorch     llama-pretrain   -      -           26h\n" +
		"base@0.1         gs://b/base                  sha256:fedcba987654   -           -                -      -           2d2h\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printModelTable(&b, sampleModelVersions()[:1], true, now); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); !strings.HasSuffix(lines[0], "REGISTERED-BY   CHECKPOINT") ||
		!strings.HasSuffix(lines[1], "alice           s3://ckpt/sft/step-1200") {
		t.Fatalf("wide table:\n%s", b.String())
	}

	cl := &fakeModels{t: t, versions: sampleModelVersions()}
	out, err := runModel(t, cl, "", "get", "llama@1.0")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME ") ||
		!strings.HasPrefix(lines[1], "llama@1.0 ") || !strings.Contains(lines[1], "sha256:fedcba987654 ") {
		t.Fatalf("get:\n%s", out)
	}
	out, err = runModel(t, cl, "", "get", "llama@1.0", "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: ModelVersion") || !strings.Contains(out, "digest: "+testDigest2) {
		t.Fatalf("get -o yaml: %v\n%s", err, out)
	}
	if _, err := runModel(t, cl, "", "get", "llama@9"); err == nil || !strings.Contains(err.Error(), "get modelversion/llama@9: model version") {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := runModel(t, nil, "", "get", "llama"); err == nil ||
		!strings.Contains(err.Error(), `"llama" is not MODEL@VERSION (e.g. llama@1.0; `+"`shoal model list llama`") {
		t.Fatalf("get without a version: %v", err)
	}

	out, err = runModel(t, cl, "", "list", "llama")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "llama@1.0 ") ||
		cl.listed[len(cl.listed)-1] != "llama" {
		t.Fatalf("list llama (asked for %q):\n%s", cl.listed, out)
	}
	out, err = runModel(t, cl, "", "list")
	if err != nil || strings.Count(out, "\n") != 4 {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = runModel(t, cl, "", "list", "gpt")
	if err != nil || out != "No versions of model gpt found: register one with `shoal model register`.\n" {
		t.Fatalf("empty list: %v %q", err, out)
	}
	out, err = runModel(t, cl, "", "list", "-o", "json")
	var list struct{ Items []v1alpha1.ModelVersion }
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 3 {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	if _, err := runModel(t, nil, "", "list", "llama@1.0"); err == nil || !strings.Contains(err.Error(), "not a version") {
		t.Fatalf("list of a version: %v", err)
	}
}

func TestModelLineage(t *testing.T) {
	vs := sampleModelVersions()
	var b bytes.Buffer
	if err := printModelLineage(&b, vs); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"llama-chat@2.0  s3://models/llama-chat/2.0  sha256:0123456789ab  pytorch\n" +
		"  trained by job llama-sft (queue research/nlp, owner alice) from checkpoint step 1200 s3://ckpt/sft/step-1200 (taken 2026-12-02T09:00:00Z)\n" +
		"  derived from llama@1.0\n" +
		"llama@1.0  s3://models/llama/1.0  sha256:fedcba987654  pytorch\n" +
		"  trained by job llama-pretrain (queue research/nlp, owner alice), no checkpoint recorded\n" +
		"base@0.1  gs://b/base  sha256:fedcba987654\n" +
		"  no source job recorded\n"
	if b.String() != want {
		t.Fatalf("lineage:\n%s\nwant:\n%s", b.String(), want)
	}

	// through the command: the fake follows the parents
	vs[1].Spec.Parent = "base@0.1"
	cl := &fakeModels{t: t, versions: vs}
	out, err := runModel(t, cl, "", "lineage", "llama-chat@2.0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "llama-chat@2.0  ") || !strings.Contains(out, "  derived from base@0.1\nbase@0.1  ") ||
		!strings.HasSuffix(out, "  no source job recorded\n") {
		t.Fatalf("lineage:\n%s", out)
	}
	out, err = runModel(t, cl, "", "lineage", "llama@1.0", "-o", "json")
	var list struct {
		Kind  string
		Items []v1alpha1.ModelVersion
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || list.Kind != "List" || len(list.Items) != 2 ||
		list.Items[0].Name != "llama@1.0" || list.Items[1].Name != "base@0.1" {
		t.Fatalf("lineage -o json: %v\n%s", err, out)
	}
	if _, err := runModel(t, cl, "", "lineage", "gpt@1"); err == nil ||
		!strings.Contains(err.Error(), "lineage of modelversion/gpt@1: model version \"gpt@1\" not found") {
		t.Fatalf("lineage of a missing version: %v", err)
	}
	if _, err := runModel(t, nil, "", "lineage", "@1"); err == nil || !strings.Contains(err.Error(), "is not MODEL@VERSION (e.g. llama@1.0)") {
		t.Fatalf("lineage of a bad name: %v", err)
	}
}

func TestModelCompletion(t *testing.T) {
	cl := &fakeModels{t: t, versions: sampleModelVersions()}
	dial := func(*cobra.Command) (shoalv1.ModelsClient, func(), error) { return cl, func() {}, nil }
	cmd := &cobra.Command{}
	cmd.SetContext(t.Context())
	names, dir := completeModelVersionNames(dial)(cmd, nil, "lla")
	if !reflect.DeepEqual(names, []string{"llama-chat@2.0", "llama@1.0"}) || dir != cobra.ShellCompDirectiveNoFileComp || cl.listed[0] != "" {
		t.Fatalf("completed %v, %v (listed %q)", names, dir, cl.listed)
	}
	names, _ = completeModelVersionNames(dial)(cmd, nil, "llama@")
	if !reflect.DeepEqual(names, []string{"llama@1.0"}) || cl.listed[1] != "llama" {
		t.Fatalf("completed %v (listed %q)", names, cl.listed)
	}
	names, _ = completeModelNames(dial)(cmd, nil, "")
	if !reflect.DeepEqual(names, []string{"base", "llama", "llama-chat"}) {
		t.Fatalf("model names %v", names)
	}
}
