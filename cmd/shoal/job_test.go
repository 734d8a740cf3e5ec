// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func sampleJobForOutput() *v1alpha1.Job {
	j, err := v1alpha1.DecodeJob([]byte(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: llama, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  queue: research/nlp
  priorityClass: training
  gang: {members: 4, gpusPerMember: 8}
  placement: {topology: {required: rack, preferred: nvlink}}
  template: {spec: {containers: [{name: t, image: busybox}]}}
status:
  phase: Running
  conditions: [{type: Admitted, status: "True", reason: Queued, message: accepted, lastTransitionTime: "2026-01-01T00:00:00Z"}]
  members: [{index: 0, cluster: eu1, node: n1, phase: Running}, {index: 1, cluster: eu2, node: n2, phase: Running}]
`))
	if err != nil {
		panic(err)
	}
	v1alpha1.SetJobDefaults(j)
	return j
}

func TestPrintJobTable(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	if err := printJobTable(&b, []*v1alpha1.Job{sampleJobForOutput()}, true, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"NAME", "EPOCH", "llama", "research/nlp", "Running", "4x8 GPU", "training",
		"eu1,eu2", "120m", "rack (prefer nvlink)", "BinPack"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestDescribeJob(t *testing.T) {
	var b bytes.Buffer
	j := sampleJobForOutput()
	j.Status.Owner = "alice"
	if err := describeJob(&b, j, time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Owner:", "alice", "Priority:", "training (10000)", "max 3 restarts", "preemptible true, 30s grace",
		"Container t:", "Conditions:", "Admitted", "Queued", "Members:", "INDEX", "eu2", "n2"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
}

func TestReadJobsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unknown field", "apiVersion: shoal.dev/v1alpha1\nkind: Job\nmetadata: {name: a}\nspec: {gang: {membrs: 1}}\n",
			`unknown field "spec.gang.membrs"`},
		{"queue instead of job", "apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n", "not a Job"},
		{"empty", "# nothing\n", "holds no job"},
		{"malformed", "kind: [", "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			cmd.SetIn(strings.NewReader(tc.in))
			_, err := readJobs(cmd, "-")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestQuotasFromFlags(t *testing.T) {
	q, err := quotasFromFlags(map[string]string{"h100": "64", "a100": "8"}, map[string]string{"h100": "16"})
	if err != nil || q["h100"].Nominal != 64 || *q["h100"].BorrowingLimit != 16 || q["a100"].BorrowingLimit != nil {
		t.Fatalf("got %+v, %v", q, err)
	}
	queue := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1alpha1.QueueSpec{Quotas: q}}
	if got := queueQuotas(queue); got != "a100=8,h100=64+16" {
		t.Errorf("quotas rendered %q", got)
	}
	if _, err := quotasFromFlags(map[string]string{"h100": "lots"}, nil); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("bad number: %v", err)
	}
	if _, err := quotasFromFlags(nil, map[string]string{"h100": "4"}); err == nil || !strings.Contains(err.Error(), "--gpu-quota h100=N") {
		t.Errorf("limit without quota: %v", err)
	}
}

func TestOutputFormats(t *testing.T) {
	if err := outCheck("xml"); err == nil || !strings.Contains(err.Error(), "table, wide, yaml, json") {
		t.Errorf("bad format: %v", err)
	}
	var b bytes.Buffer
	if ok, err := outStructured(&b, "yaml", sampleJobForOutput()); !ok || err != nil || !strings.Contains(b.String(), "kind: Job") {
		t.Errorf("yaml: %v %v\n%s", ok, err, b.String())
	}
	if ok, _ := outStructured(&b, "table", nil); ok {
		t.Error("table printed as structured")
	}
}
