// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const sampleJob = `apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: llama-pretrain}
spec:
  queue: research/nlp
  priorityClass: training
  gang: {members: 32, gpusPerMember: 8}
  placement:
    maxClusters: 1
    topology: {required: rack, preferred: nvlink}
    policy: BinPack
  failurePolicy: {maxRestarts: 3, onClusterLoss: Reschedule}
  template:
    spec:
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.01-py3
        resources: {limits: {nvidia.com/gpu: 8}}
`

func TestDecodeArchitectureExample(t *testing.T) {
	j, err := DecodeJob([]byte(sampleJob))
	if err != nil {
		t.Fatal(err)
	}
	SetJobDefaults(j)
	if errs := ValidateJob(j); len(errs) > 0 {
		t.Fatalf("sample job invalid: %v", errs)
	}
	if j.Spec.Gang.Members != 32 || j.Spec.Placement.Topology.Preferred != TopologyNVLink {
		t.Errorf("decoded %+v", j.Spec)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"malformed YAML", "apiVersion: shoal.dev/v1alpha1\nkind: Job\nspec: [unclosed", []string{"malformed YAML"}},
		{"unknown fields with paths", strings.Replace(sampleJob, "members: 32", "membrs: 32, colour: red", 1),
			[]string{`unknown field "spec.gang.membrs"`, `unknown field "spec.gang.colour"`}},
		{"duplicate field", "apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\nmetadata: {name: b}\n",
			[]string{"malformed YAML", "metadata"}},
		{"wrong apiVersion", "apiVersion: batch/v1\nkind: Job\n", []string{`apiVersion is "batch/v1"`}},
		{"unknown kind", "apiVersion: shoal.dev/v1alpha1\nkind: Pod\n", []string{`kind "Pod" is not one of`}},
		{"case mismatch", strings.Replace(sampleJob, "queue: research/nlp", "Queue: research/nlp", 1),
			[]string{`unknown field "spec.Queue"`}},
		{"wrong type", strings.Replace(sampleJob, "members: 32", "members: many", 1), []string{"spec.gang.members"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecodeAll(t *testing.T) {
	stream := "# queue first\napiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: research/nlp}\n" +
		"spec: {weight: 2, quotas: {h100: {nominal: 64}}}\n---\n# nothing here\n---\n" + sampleJob
	objs, err := DecodeAll(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects", len(objs))
	}
	if q, ok := objs[0].(*Queue); !ok || q.Spec.Quotas["h100"].Nominal != 64 {
		t.Errorf("first object %#v", objs[0])
	}
	if _, ok := objs[1].(*Job); !ok {
		t.Errorf("second object %T", objs[1])
	}
	_, err = DecodeAll(strings.NewReader(sampleJob + "---\napiVersion: shoal.dev/v1alpha1\nkind: Job\nbogus: 1\n"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Doc != 2 || !strings.Contains(err.Error(), "document 2") {
		t.Errorf("error %v should name document 2", err)
	}
}

func TestDecodeJSON(t *testing.T) {
	j, err := DecodeQueue([]byte(`{"apiVersion":"shoal.dev/v1alpha1","kind":"Queue","metadata":{"name":"a"},"spec":{"weight":3}}`))
	if err != nil || *j.Spec.Weight != 3 {
		t.Fatalf("got %+v, %v", j, err)
	}
	if _, err := DecodeQueue([]byte(sampleJob)); err == nil {
		t.Error("a Job decoded as a Queue")
	}
}

// TestExamplesAreValid decodes, defaults and validates every object of
// the project's examples/ directory.
func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := DecodeAll(r)
		_ = r.Close()
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, o := range objs {
			var errs field.ErrorList
			switch x := o.(type) {
			case *Job:
				SetJobDefaults(x)
				errs = ValidateJob(x)
			case *Queue:
				SetQueueDefaults(x)
				errs = ValidateQueue(x)
			case *InferenceService:
				SetInferenceServiceDefaults(x)
				if err := ValidateInferenceService(x); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			case *GPUPool:
				if err := ValidateGPUPool(x); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
			if len(errs) > 0 {
				t.Errorf("%s: %v", f, errs)
			}
		}
	}
}

func TestDecodeJSONDuplicateField(t *testing.T) {
	_, err := Decode([]byte(`{"apiVersion":"shoal.dev/v1alpha1","kind":"Queue","metadata":{"name":"a"},"metadata":{"name":"b"}}`))
	if err == nil || !strings.Contains(err.Error(), `duplicate field "metadata"`) {
		t.Errorf("duplicate JSON field: %v", err)
	}
}
