// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestValidateJobNameTable(t *testing.T) {
	longest := "a" + strings.Repeat("b", MaxJobNameLength-1)
	tests := []struct {
		name string
		want []string
	}{
		{"llama", nil},
		{"a", nil},
		{"llama-7b-v2", nil},
		{longest, nil},
		{longest + "c", []string{"metadata.name: Too long"}},
		{strings.Repeat("a", 63), []string{"metadata.name: Too long"}},
		{strings.Repeat("a", 64), []string{"metadata.name: Too long"}},
		{"7b-llama", []string{"metadata.name: Invalid value"}},
		{"0", []string{"metadata.name: Invalid value"}},
		{"-llama", []string{"metadata.name: Invalid value"}},
		{"llama-", []string{"metadata.name: Invalid value"}},
		{"Llama", []string{"metadata.name: Invalid value"}},
		{"llama.7b", []string{"metadata.name: Invalid value"}},
		{"llama_7b", []string{"metadata.name: Invalid value"}},
		{"9" + strings.Repeat("a", 63), []string{"metadata.name: Too long", "metadata.name: Invalid value"}},
	}
	for _, tt := range tests {
		j := newJob(tt.name).obj()
		if got := errStrings(ValidateJob(j)); !slices.Equal(got, tt.want) {
			t.Errorf("name %q (%d): errors %v, want %v", tt.name, len(tt.name), got, tt.want)
		}
	}
	errs := ValidateJobName(longest+"c", nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, strconv.Itoa(MaxJobNameLength)) {
		t.Errorf("too long: %v, want one error naming the limit %d", errs, MaxJobNameLength)
	}
	errs = ValidateJobName("7b", nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "Service") {
		t.Errorf("digit first: %v, want one error that says why", errs)
	}
}

// TestJobNameLimits: for the longest valid name, every name the hub builds
// from it is valid at the largest member index and epoch.
func TestJobNameLimits(t *testing.T) {
	if got := len(strconv.Itoa(MaxGangMembers - 1)); got != maxMemberIndexDigits {
		t.Fatalf("maxMemberIndexDigits = %d, the largest index %d has %d", maxMemberIndexDigits, MaxGangMembers-1, got)
	}
	job := "a" + strings.Repeat("9", MaxJobNameLength-1)
	if errs := ValidateJobName(job, nil); len(errs) != 0 {
		t.Fatalf("longest name refused: %v", errs)
	}
	last := int32(MaxGangMembers - 1)
	check := func(what, name string, msgs []string) {
		t.Helper()
		if len(msgs) != 0 {
			t.Errorf("%s %q: %v", what, name, msgs)
		}
	}
	check("service", ServiceName(job), validation.IsDNS1035Label(ServiceName(job)))
	check("label value", job, validation.IsValidLabelValue(job))
	check("hostname", MemberHostname(job, last), validation.IsDNS1123Label(MemberHostname(job, last)))
	pod := MemberPodName(job, math.MaxInt64, last)
	check("pod name", pod, validation.IsDNS1123Subdomain(pod))
	addr := MasterAddr(job, strings.Repeat("n", validation.DNS1123LabelMaxLength))
	check("MASTER_ADDR", addr, validation.IsDNS1123Subdomain(addr))
	for _, l := range strings.Split(addr, ".") {
		check("MASTER_ADDR label", l, validation.IsDNS1123Label(l))
	}
	slice := EndpointSliceName(job, MaxGangMembers/MaxEndpointsPerSlice)
	check("EndpointSlice name", slice, validation.IsDNS1123Subdomain(slice))
	// One more character breaks the host name of the last member.
	if msgs := validation.IsDNS1123Label(MemberHostname(job+"a", last)); len(msgs) == 0 {
		t.Errorf("limit %d is not tight: a name one longer still gives valid host names", MaxJobNameLength)
	}
}
