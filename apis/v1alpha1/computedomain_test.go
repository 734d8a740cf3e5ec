// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"testing"
)

// TestValidateComputeDomain: a compute domain goes with whole GPUs only;
// with mig, shared or roles it is refused at spec.gang.computeDomain.
func TestValidateComputeDomain(t *testing.T) {
	tests := []struct {
		name string
		job  *Job
		want []string
	}{
		{"whole GPUs", newJob("a").with(func(j *Job) { j.Spec.Gang.ComputeDomain = true }).obj(), nil},
		{"with mig", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb", PerMember: 1}
			j.Spec.Gang.ComputeDomain = true
		}).obj(), []string{"spec.gang.computeDomain: Forbidden"}},
		{"with shared", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.Shared = &SharedGPURequest{PerMember: 1}
			j.Spec.Gang.ComputeDomain = true
		}).obj(), []string{"spec.gang.computeDomain: Forbidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateJob(tt.job)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %v, want %v", errs, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want prefix %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

// TestComputeDomainNames: one name per job, epoch and clique, a DNS-1123
// label for the longest job name.
func TestComputeDomainNames(t *testing.T) {
	a := ComputeDomainName("train", 3, "0f1e.0")
	if a == ComputeDomainName("train", 3, "0f1e.1") || a == ComputeDomainName("train", 4, "0f1e.0") ||
		a != ComputeDomainName("train", 3, "0f1e.0") {
		t.Fatalf("names not one per job, epoch and clique: %s", a)
	}
	long := ComputeDomainChannelTemplate(ComputeDomainName(strings.Repeat("j", MaxJobNameLength), 1<<40, "x"))
	if errs := ValidateJobName(strings.Repeat("j", MaxJobNameLength), nil); len(errs) != 0 || len(long) > 253 {
		t.Fatalf("template name %q too long", long)
	}
	if _, ok, err := MemberComputeDomainOf(map[string]string{AnnotationComputeDomain: `{"nodes":[]}`}); !ok || err == nil {
		t.Fatalf("an annotation naming no node must be refused")
	}
}
