// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// fuzzSeeds are realistic manifests: the examples, every kind, YAML and
// JSON, plus near misses (unknown field, wrong kind, duplicate key).
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range []string{
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"train"},"spec":{"queue":"research/nlp","gang":{"members":4,"gpusPerMember":8},"template":{"spec":{"containers":[{"name":"t","image":"pytorch:2"}]}}}}`,
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"roles"},"spec":{"queue":"a","roles":[{"name":"launcher","members":1,"template":{"spec":{"containers":[{"name":"l","image":"x"}]}}},{"name":"worker","members":2,"gpusPerMember":1,"template":{"spec":{"containers":[{"name":"w","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}]}}`,
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"Queue","metadata":{"name":"research/cv"},"spec":{"weight":2,"quotas":{"h100":{"nominal":8,"borrowingLimit":4}}}}`,
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"Rollout","metadata":{"name":"r1"},"spec":{"revision":"0123456789abcdef0123456789abcdef01234567","waves":"1,25%,100%","soak":"5m"}}`,
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"Cluster","metadata":{"name":"eu-1","labels":{"region":"eu"}},"spec":{"uid":"abc"}}`,
		`{"apiVersion":"shoal.dev/v1alpha1","kind":"JoinToken","metadata":{"name":"abcdef"},"spec":{"secretHash":"00","expires":"2026-01-01T00:00:00Z","maxUses":1}}`,
		"apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\nspec: {weight: 0}\n",
		"apiVersion: shoal.dev/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {queue: a, gang: {members: 1}, bogus: 1}\n",
		"apiVersion: shoal.dev/v1alpha1\nkind: Job\nmetadata: {name: j, name: k}\n",
		"apiVersion: v1\nkind: Pod\n",
		`{"kind":"Job","apiVersion":"shoal.dev/v1alpha1","spec":{"gang":{"members":1e3}}}`,
		"---\n# only a comment\n---\n",
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzDecode feeds arbitrary bytes to Decode, the strict decoder of every
// manifest the CLI reads and every object the hub receives as JSON.
// Properties: no panic; every error is a *DecodeError; a decoded object is
// the type its kind names; defaulting and validation never panic and
// defaulting is idempotent; a decoded object re-encodes to JSON that
// decodes to an equal object with the same validation errors.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T is not a *DecodeError: %v", err, err)
			}
			if obj != nil {
				t.Fatalf("Decode returned %T with error %v", obj, err)
			}
			return
		}
		checkDecoded(t, obj)
	})
}

// FuzzDecodeAll feeds arbitrary multi-document streams to DecodeAll (what
// `shoal job submit -f` and `shoal queue create -f` read). Properties: no
// panic; an error is a *DecodeError naming a document >= 1 (or the reader's
// error); every object it returns holds the per-object properties of
// FuzzDecode.
func FuzzDecodeAll(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(bytes.Join(seeds, []byte("\n---\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := DecodeAll(bytes.NewReader(data))
		var de *DecodeError
		if err != nil && errors.As(err, &de) && de.Doc < 1 {
			t.Fatalf("DecodeAll error names document %d: %v", de.Doc, err)
		}
		for _, obj := range objs {
			checkDecoded(t, obj)
		}
	})
}

// checkDecoded checks the properties every decoded object must have.
func checkDecoded(t *testing.T, obj any) {
	t.Helper()
	switch o := obj.(type) {
	case *Job:
		if o.Kind != KindJob {
			t.Fatalf("decoded *Job of kind %q", o.Kind)
		}
		errs := ValidateJob(o)
		again := roundTrip(t, o).(*Job)
		if got := ValidateJob(again); len(got) != len(errs) {
			t.Fatalf("validation differs after a round trip: %v, then %v", errs, got)
		}
		once := o.DeepCopy()
		SetJobDefaults(once)
		twice := once.DeepCopy()
		SetJobDefaults(twice)
		if !equality.Semantic.DeepEqual(once, twice) {
			t.Fatalf("SetJobDefaults is not idempotent:\n%+v\n%+v", once.Spec, twice.Spec)
		}
		if len(ValidateJob(once)) == 0 {
			// A job the hub admits: it must survive storage (JSON) unchanged.
			stored := roundTrip(t, once).(*Job)
			if errs := ValidateJob(stored); len(errs) != 0 {
				t.Fatalf("valid job is invalid after a round trip: %v", errs)
			}
		}
	case *Queue:
		if o.Kind != KindQueue {
			t.Fatalf("decoded *Queue of kind %q", o.Kind)
		}
		errs := ValidateQueue(o)
		again := roundTrip(t, o).(*Queue)
		if got := ValidateQueue(again); len(got) != len(errs) {
			t.Fatalf("validation differs after a round trip: %v, then %v", errs, got)
		}
		d := o.DeepCopy()
		SetQueueDefaults(d)
		_ = ValidateQueue(d)
	case *Rollout:
		if o.Kind != KindRollout {
			t.Fatalf("decoded *Rollout of kind %q", o.Kind)
		}
		roundTrip(t, o)
	case *Cluster:
		if o.Kind != KindCluster {
			t.Fatalf("decoded *Cluster of kind %q", o.Kind)
		}
		roundTrip(t, o)
	case *JoinToken:
		if o.Kind != KindJoinToken {
			t.Fatalf("decoded *JoinToken of kind %q", o.Kind)
		}
		roundTrip(t, o)
	case *ModelVersion:
		if o.Kind != KindModelVersion {
			t.Fatalf("decoded *ModelVersion of kind %q", o.Kind)
		}
		roundTrip(t, o)
	case *InferenceService:
		if o.Kind != KindInferenceService {
			t.Fatalf("decoded *InferenceService of kind %q", o.Kind)
		}
		roundTrip(t, o)
		once := o.DeepCopy()
		SetInferenceServiceDefaults(once)
		twice := once.DeepCopy()
		SetInferenceServiceDefaults(twice)
		if !equality.Semantic.DeepEqual(once, twice) {
			t.Fatalf("SetInferenceServiceDefaults is not idempotent:\n%+v\n%+v", once.Spec, twice.Spec)
		}
		_ = ValidateInferenceService(once)
	case *GPUPool:
		if o.Kind != KindGPUPool {
			t.Fatalf("decoded *GPUPool of kind %q", o.Kind)
		}
		roundTrip(t, o)
		_ = ValidateGPUPool(o)
	default:
		t.Fatalf("decoded an object of unexpected type %T", obj)
	}
}

// roundTrip encodes obj as JSON, decodes it strictly and checks that the
// result equals obj; it returns the result.
func roundTrip(t *testing.T, obj any) any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("re-encode %T: %v", obj, err)
	}
	again, err := Decode(b)
	if err != nil {
		t.Fatalf("re-decode %T: %v\n%s", obj, err, b)
	}
	if !equality.Semantic.DeepEqual(obj, again) {
		b2, _ := json.Marshal(again)
		t.Fatalf("round trip changed the %T:\n%s\n%s", obj, b, b2)
	}
	return again
}
