// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// filler fills a stored kind with random values that encoding/json can
// write: quantities, times, int-or-strings and raw extensions are made
// valid rather than random bits.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(4e9), 0))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(4e9), c.Int63n(1e9)).Truncate(time.Microsecond))
		},
		func(t *v1alpha1.MicroTime, c randfill.Continue) {
			*t = v1alpha1.NewMicroTime(time.Unix(c.Int63n(4e9), c.Int63n(1e9)).Truncate(time.Microsecond))
		},
		func(t *time.Time, c randfill.Continue) {
			*t = time.Unix(c.Int63n(4e9), c.Int63n(1e9)).UTC()
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{"k":1}`)
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.SetRawBytes([]byte(`{"f:spec":{}}`))
		},
	)
}

// TestDecodeJSONReadsWhatEncodingJSONReads fills each stored kind at
// random, writes it with encoding/json as the store does, and checks that
// DecodeJSON reads the same value as encoding/json does. A kind whose
// fields go-json-experiment/json read differently (a name, a method, an
// embedded struct, a time or quantity format) fails here.
func TestDecodeJSONReadsWhatEncodingJSONReads(t *testing.T) {
	kinds := map[string]func() any{
		"job":         func() any { return &v1alpha1.Job{} },
		"cluster":     func() any { return &v1alpha1.Cluster{} },
		"queue":       func() any { return &v1alpha1.Queue{} },
		"gpupool":     func() any { return &v1alpha1.GPUPool{} },
		"inference":   func() any { return &v1alpha1.InferenceService{} },
		"inventory":   func() any { return &inventory.Cluster{} },
		"reservation": func() any { return &ledger.Reservation{} },
	}
	for name, newObj := range kinds {
		t.Run(name, func(t *testing.T) {
			for seed := range int64(200) {
				obj := newObj()
				filler(seed).Fill(obj)
				compareDecoders(t, seed, obj, newObj)
			}
		})
	}
	// A job as the hub stores it (the builder's defaults, not random).
	j := testjob.New("t-1").Queue("research").Members(4).GPUs(8).Obj()
	compareDecoders(t, -1, j, func() any { return &v1alpha1.Job{} })
}

func compareDecoders(t *testing.T, seed int64, obj any, newObj func() any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("seed %d: marshal: %v", seed, err)
	}
	want, got := newObj(), newObj()
	if err := json.Unmarshal(b, want); err != nil {
		t.Fatalf("seed %d: encoding/json: %v", seed, err)
	}
	if err := store.DecodeJSON(b, got); err != nil {
		t.Fatalf("seed %d: DecodeJSON: %v\n%s", seed, err, b)
	}
	if !reflect.DeepEqual(want, got) {
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		t.Fatalf("seed %d: DecodeJSON read another value\nencoding/json: %s\nDecodeJSON:    %s", seed, wb, gb)
	}
}

// TestDecodeJSONAcceptsWhatEncodingJSONAccepts: duplicate names (the last
// wins) and invalid UTF-8 are read as encoding/json reads them.
func TestDecodeJSONAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, in := range []string{`{"name":"a","name":"b"}`, "{\"name\":\"\xff\"}"} {
		var want, got struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if err := store.DecodeJSON([]byte(in), &got); err != nil {
			t.Fatalf("DecodeJSON(%q): %v", in, err)
		}
		if want != got {
			t.Fatalf("DecodeJSON(%q) = %q, encoding/json %q", in, got.Name, want.Name)
		}
	}
}

// BenchmarkDecodeJob decodes a stored job with encoding/json and with
// DecodeJSON.
//
//	go test ./hub/store -run '^$' -bench DecodeJob -benchmem
func BenchmarkDecodeJob(b *testing.B) {
	j := testjob.New("s-000123").Queue("scale").Members(4).GPUs(8).Obj()
	j.Status.Phase = v1alpha1.JobPending
	j.Status.Conditions = []metav1.Condition{{Type: "Scheduled", Status: metav1.ConditionFalse, Reason: "InsufficientGPUs",
		Message: "does not fit now", LastTransitionTime: metav1.Now()}}
	data, err := json.Marshal(j)
	if err != nil {
		b.Fatal(err)
	}
	for name, decode := range map[string]func([]byte, any) error{"encoding-json": json.Unmarshal, "DecodeJSON": store.DecodeJSON} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var out v1alpha1.Job
				if err := decode(data, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
