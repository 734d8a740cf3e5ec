// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestMemberPodCarriesTheAttemptTrace: member pods carry the job's
// traceparent, never one from the pod template.
func TestMemberPodCarriesTheAttemptTrace(t *testing.T) {
	d := &Dispatcher{cfg: Config{Namespace: "shoal-jobs"}}
	const jobTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct{ job, want string }{{jobTP, jobTP}, {"", ""}} {
		j := testjob.New("g").Members(2).GPUs(1).With(func(j *v1alpha1.Job) {
			j.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationTraceParent: "00-11111111111111111111111111111111-2222222222222222-01"}
			if tc.job != "" {
				j.Annotations = map[string]string{v1alpha1.AnnotationTraceParent: tc.job}
			}
		}).Obj()
		r := reservation(1, 2, "eu1")
		for _, m := range r.Members {
			p := d.memberPod(j, r, m, v1alpha1.PodSecurityPrivileged)
			if got, ok := p.Annotations[v1alpha1.AnnotationTraceParent]; got != tc.want || ok != (tc.want != "") {
				t.Errorf("job traceparent %q: member %d has %q (set %v), want %q", tc.job, m.Index, got, ok, tc.want)
			}
		}
	}
}
