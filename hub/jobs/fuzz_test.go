// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// FuzzSubmitDryRun feeds arbitrary JSON/YAML through what a Submit call
// does before it writes: DecodeJob (the server's decoder of job.json), then
// the intake's admission (copy, defaults, validation, spec hash) in dry-run
// mode. Properties: no panic; a refusal is a *DecodeError or an
// *InvalidError; an admitted job is Pending, validates, carries its spec
// hash, and survives the JSON encoding the store uses (spec, name and
// annotations unchanged; stable from the first encoding on).
func FuzzSubmitDryRun(f *testing.F) {
	files, _ := filepath.Glob("../../examples/job*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := json.Marshal(job("train", "research/nlp"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"x"},"spec":{"queue":"a","gang":{"members":0}}}`))
	f.Add([]byte("apiVersion: shoal.dev/v1alpha1\nkind: Job\nmetadata: {name: x, annotations: {a: b}}\nspec: {queue: a, gang: {members: 2, gpusPerMember: 65}}\n"))
	js, _ := services(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := v1alpha1.DecodeJob(data)
		if err != nil {
			return // FuzzDecode checks the decoder's errors
		}
		j, _, _, err := js.Submit(context.Background(), in, true)
		if err != nil {
			var inv *v1alpha1.InvalidError
			if !errors.As(err, &inv) && !errors.Is(err, errs.ErrFailedPrecondition) { // an unknown queue
				t.Fatalf("dry-run refusal %T is neither an *InvalidError nor a precondition: %v", err, err)
			}
			return
		}
		if j.Status.Phase != v1alpha1.JobPending || j.Annotations[v1alpha1.AnnotationSpecHash] == "" {
			t.Fatalf("admitted job in phase %q with spec hash %q", j.Status.Phase, j.Annotations[v1alpha1.AnnotationSpecHash])
		}
		if errs := v1alpha1.ValidateJob(j); len(errs) != 0 {
			t.Fatalf("admitted job does not validate: %v", errs)
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("encode the admitted job: %v", err)
		}
		var stored, again v1alpha1.Job
		if err := json.Unmarshal(b, &stored); err != nil || !equality.Semantic.DeepEqual(j.Spec, stored.Spec) ||
			!equality.Semantic.DeepEqual(j.Annotations, stored.Annotations) || j.Name != stored.Name {
			t.Fatalf("admitted job changes in storage (%v):\n%s", err, b)
		}
		// Timestamps lose their sub-second part once; after that the
		// encoding is stable.
		b2, _ := json.Marshal(&stored)
		if err := json.Unmarshal(b2, &again); err != nil || !equality.Semantic.DeepEqual(&stored, &again) {
			t.Fatalf("stored job changes in a second round trip (%v):\n%s\n%s", err, b, b2)
		}
	})
}
