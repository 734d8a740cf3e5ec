// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fakeCheckpointJobs answers ReportCheckpoint with job, or err.
type fakeCheckpointJobs struct {
	shoalv1.JobsClient
	t   *testing.T
	job *v1alpha1.Job
	err error
	req *shoalv1.ReportCheckpointRequest
}

func (f *fakeCheckpointJobs) ReportCheckpoint(_ context.Context, r *shoalv1.ReportCheckpointRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	f.req = r
	if f.err != nil {
		return nil, f.err
	}
	b, err := json.Marshal(f.job)
	if err != nil {
		f.t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}, nil
}

// runJobCheckpoint runs `shoal job checkpoint ARGS` against cl; a nil cl
// fails the test when the command dials the hub.
func runJobCheckpoint(t *testing.T, cl shoalv1.JobsClient, args ...string) (string, error) {
	t.Helper()
	cmd := newJobCheckpointCommandWith(func(*cobra.Command) (shoalv1.JobsClient, func(), error) {
		if cl == nil {
			t.Fatalf("job checkpoint %v dialed the hub; want a flag error first", args)
		}
		return cl, func() {}, nil
	})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func sampleCheckpoint() *v1alpha1.JobCheckpoint {
	return &v1alpha1.JobCheckpoint{
		Step:            1200,
		URI:             "s3://ckpt/run/step-1200",
		Time:            metav1.NewTime(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)),
		ReportedAt:      metav1.NewTime(time.Date(2026, 1, 1, 1, 0, 3, 0, time.UTC)),
		ReportedBy:      "agent:eu1",
		Epoch:           2,
		Count:           3,
		IntervalSeconds: 3600,
	}
}

func TestJobCheckpointFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no uri", []string{"llama", "--step", "1200"}, "--uri is required"},
		{"empty uri", []string{"llama", "--step", "1200", "--uri", ""}, "--uri is required"},
		{"no step", []string{"llama", "--uri", "s3://ckpt/run/step-1200"}, "--step is required"},
		{"negative step", []string{"llama", "--step", "-1", "--uri", "s3://c/1"}, "--step -1: must be 0 or more"},
		{"bad time", []string{"llama", "--step", "1", "--uri", "s3://c/1", "--time", "yesterday"}, `--time "yesterday": not an RFC 3339 time`},
		{"time without zone", []string{"llama", "--step", "1", "--uri", "s3://c/1", "--time", "2026-01-01T12:00:00"}, "not an RFC 3339 time"},
		{"no name", []string{"--step", "1", "--uri", "s3://c/1"}, "accepts 1 arg(s)"},
		{"bad output", []string{"llama", "--step", "1", "--uri", "s3://c/1", "-o", "xml"}, "unknown output format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runJobCheckpoint(t, nil, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestJobCheckpointSendsTheReport(t *testing.T) {
	j := sampleJobForOutput()
	j.Status.Checkpoint = sampleCheckpoint()
	cl := &fakeCheckpointJobs{t: t, job: j}
	out, err := runJobCheckpoint(t, cl, "llama", "--step", "1200", "--uri", "s3://ckpt/run/step-1200", "--time", "2026-01-01T01:00:00+01:00")
	if err != nil {
		t.Fatal(err)
	}
	if r := cl.req; r.Name != "llama" || r.Step != 1200 || r.Uri != "s3://ckpt/run/step-1200" || r.Time != "2026-01-01T01:00:00+01:00" {
		t.Fatalf("sent %+v", r)
	}
	if want := "job/llama: checkpoint step 1200 at s3://ckpt/run/step-1200 recorded (3 reported)\n"; out != want {
		t.Fatalf("printed %q, want %q", out, want)
	}

	// step 0 is a step; no --time: the hub's clock
	out, err = runJobCheckpoint(t, cl, "llama", "--step", "0", "--uri", "s3://ckpt/run/step-0", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if r := cl.req; r.Step != 0 || r.Time != "" {
		t.Fatalf("sent %+v", r)
	}
	var got v1alpha1.Job
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Status.Checkpoint == nil || got.Status.Checkpoint.Count != 3 {
		t.Fatalf("-o json printed %v, %v:\n%s", got.Status.Checkpoint, err, out)
	}
}

func TestJobCheckpointHubRefusal(t *testing.T) {
	cl := &fakeCheckpointJobs{t: t, err: status.Error(codes.InvalidArgument, `Checkpoint "llama" is invalid: step: Invalid value: 10: older than the latest (1200)`)}
	_, err := runJobCheckpoint(t, cl, "llama", "--step", "10", "--uri", "s3://c/10")
	if err == nil || !strings.Contains(err.Error(), "checkpoint job/llama: Checkpoint \"llama\" is invalid") ||
		!strings.Contains(err.Error(), "fix the fields listed") {
		t.Fatalf("err = %v", err)
	}
}

func TestJobCheckpointWithoutCheckpointInAnswer(t *testing.T) {
	var b bytes.Buffer
	req := &shoalv1.ReportCheckpointRequest{Name: "llama", Step: 5, Uri: "gs://b/5"}
	if err := printCheckpointRecorded(&b, req, sampleJobForOutput()); err != nil {
		t.Fatal(err)
	}
	if want := "job/llama: checkpoint step 5 at gs://b/5 recorded\n"; b.String() != want {
		t.Fatalf("printed %q, want %q", b.String(), want)
	}
}

func TestDescribeCheckpoint(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 5, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := describeCheckpoint(&b, sampleCheckpoint(), now); err != nil {
		t.Fatal(err)
	}
	want := "Checkpoint:\n" +
		"  Step:          1200\n" +
		"  URI:           s3://ckpt/run/step-1200\n" +
		"  Taken:         2026-01-01T01:00:00Z (5m ago)\n" +
		"  Reported:      2026-01-01T01:00:03Z (4m57s ago) by agent:eu1, epoch 2\n" +
		"  Checkpoints:   3, every ~1h0m0s\n"
	if b.String() != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", b.String(), want)
	}

	// the first checkpoint: no interval yet
	c := sampleCheckpoint()
	c.Count, c.IntervalSeconds, c.Epoch, c.ReportedBy = 1, 0, 0, "alice"
	b.Reset()
	if err := describeCheckpoint(&b, c, now); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "by alice\n") || !strings.Contains(out, "Checkpoints:   1\n") || strings.Contains(out, "every") {
		t.Fatalf("first checkpoint:\n%s", out)
	}

	// in the whole description, before the conditions; none without one
	j := sampleJobForOutput()
	j.Status.Checkpoint = sampleCheckpoint()
	b.Reset()
	if err := describeJob(&b, j, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if i, k := strings.Index(out, "Checkpoint:\n"), strings.Index(out, "Conditions:\n"); i < 0 || k < i {
		t.Fatalf("describe has no checkpoint section before the conditions:\n%s", out)
	}
	b.Reset()
	if err := describeJob(&b, sampleJobForOutput(), now); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Checkpoint:") {
		t.Fatalf("a job without a checkpoint describes one:\n%s", b.String())
	}
}

func TestPrintJobTableCheckpointColumn(t *testing.T) {
	now := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	with := sampleJobForOutput()
	with.Status.Checkpoint = sampleCheckpoint()
	without := sampleJobForOutput()
	without.Name = "plain"
	var b bytes.Buffer
	if err := printJobTable(&b, []*v1alpha1.Job{with, without}, true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "EPOCH   CHECKPOINT") ||
		!strings.HasSuffix(lines[1], " 1200") || !strings.HasSuffix(lines[2], " -") {
		t.Fatalf("wide table:\n%s", b.String())
	}
	b.Reset()
	if err := printJobTable(&b, []*v1alpha1.Job{with}, false, now); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "CHECKPOINT") {
		t.Fatalf("the narrow table has the checkpoint:\n%s", b.String())
	}
}
