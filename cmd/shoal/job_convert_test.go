// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/convert"
)

func TestConvertJobWritesJobAndDroppedFields(t *testing.T) {
	data, err := os.ReadFile("../../internal/convert/testdata/pytorchjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := convertJob(&out, &errOut, data, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	j, err := v1alpha1.DecodeJob(out.Bytes())
	if err != nil {
		t.Fatalf("stdout is not a Shoal job: %v\n%s", err, out.String())
	}
	if len(j.Spec.Roles) != 2 || j.Spec.Roles[0].Name != "master" {
		t.Errorf("roles %+v", j.Spec.Roles)
	}
	for _, want := range []string{"not carried: spec.elasticPolicy:", "not carried: spec.runPolicy.cleanPodPolicy:",
		"not carried: spec.pytorchReplicaSpecs.Worker.restartPolicy:", "note: spec.failurePolicy.maxRestarts: 2"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if strings.Contains(errOut.String(), "invalid") || strings.Contains(out.String(), "not carried") {
		t.Errorf("a valid conversion reported problems or mixed stderr into stdout:\n%s\n%s", out.String(), errOut.String())
	}
	// A source that converts into an invalid Shoal job (no GPU role) is
	// still printed, with the problem on stderr.
	cpu := strings.ReplaceAll(strings.ReplaceAll(string(data), "nvidia.com/gpu: 8", "cpu: 8"), `nvidia.com/gpu: "8"`, "cpu: 8")
	out.Reset()
	errOut.Reset()
	if err := convertJob(&out, &errOut, []byte(cpu), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if out.Len() == 0 || !strings.Contains(errOut.String(), "invalid as a Shoal job (fix before submitting): spec.roles:") {
		t.Errorf("no job or no validation problem:\n%s\n%s", out.String(), errOut.String())
	}
	if err := convertJob(&out, &errOut, []byte("kind: ["), convert.Options{}); !errors.Is(err, convert.ErrUnreadable) {
		t.Errorf("unreadable input: err = %v", err)
	}
}

func TestJobOutputShowsRoles(t *testing.T) {
	j, err := v1alpha1.DecodeJob([]byte(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: mpi, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  queue: research
  roles:
  - {name: launcher, members: 1, template: {spec: {containers: [{name: l, image: mpi-launcher}]}}}
  - {name: worker, members: 2, gpusPerMember: 8, template: {spec: {containers: [{name: w, image: trainer}]}}}
status:
  members: [{index: 0, role: launcher, cluster: eu1}, {index: 1, role: worker, cluster: eu1, node: n1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	v1alpha1.SetJobDefaults(j)
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := printJobTable(&b, []*v1alpha1.Job{j}, false, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "launcher:1xCPU+worker:2x8 GPU") {
		t.Errorf("table lacks the roles:\n%s", b.String())
	}
	b.Reset()
	if err := describeJob(&b, j, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Gang:", "launcher:1xCPU+worker:2x8 GPU", "Role launcher:", "members 0-0",
		"Role worker:", "members 1-2", "launcher Container l:", "mpi-launcher", "worker Container w:", "trainer",
		"INDEX", "ROLE", "launcher", "n1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}
