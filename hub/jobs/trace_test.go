// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// A client cannot choose the trace its job's attempts go to: the hub
// drops the trace annotations it sent (and, with tracing on, mints its own).
func TestSubmitDropsClientTraceContext(t *testing.T) {
	ctx, q := testCtx(t), uniq("org")
	js, _ := services(t, nil, q)
	in := job(uniq("traced"), q)
	in.Annotations = map[string]string{
		v1alpha1.AnnotationTraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		v1alpha1.AnnotationTraceStart:  "2020-01-01T00:00:00Z",
		"team":                         "nlp",
	}
	j, _, _, err := js.Submit(ctx, in, false)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := js.Get(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1alpha1.AnnotationTraceParent, v1alpha1.AnnotationTraceStart} {
		if v, ok := got.Annotations[k]; ok {
			t.Errorf("stored job has the client's %s=%q", k, v)
		}
	}
	if got.Annotations["team"] != "nlp" {
		t.Errorf("other annotations lost: %v", got.Annotations)
	}
}
