// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestValidateSharedGPUs(t *testing.T) {
	shared := func(sh SharedGPURequest) func(*Job) {
		return func(j *Job) { j.Spec.Gang.Shared = &sh }
	}
	roles := func(rs ...Role) func(*Job) {
		return func(j *Job) {
			for i := range rs {
				rs[i].Template = j.Spec.Template
			}
			j.Spec.Roles, j.Spec.Gang, j.Spec.Template = rs, Gang{}, corev1.PodTemplateSpec{}
		}
	}
	tests := []struct {
		name string
		job  *Job
		want []string
	}{
		{"valid", newJob("a").gpus(0).with(shared(SharedGPURequest{PerMember: 2, Strategy: SharingMPS})).obj(), nil},
		{"default per member, any strategy", newJob("a").gpus(0).with(shared(SharedGPURequest{})).obj(), nil},
		{"shared and gpus both", newJob("a").gpus(1).with(shared(SharedGPURequest{PerMember: 1})).obj(),
			[]string{"spec.gang.gpusPerMember: Forbidden"}},
		{"shared and mig both", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb"}
			j.Spec.Gang.Shared = &SharedGPURequest{}
		}).obj(), []string{"spec.gang.shared: Forbidden"}},
		{"shared and devices both", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.Shared = &SharedGPURequest{}
			j.Spec.Gang.Devices = &DeviceRequest{DeviceClassName: "gpu.nvidia.com"}
		}).obj(), []string{"spec.gang.devices: Forbidden"}},
		{"per member out of range, unknown strategy", newJob("a").gpus(0).with(
			shared(SharedGPURequest{PerMember: MaxSharesPerMember + 1, Strategy: "vgpu"})).obj(),
			[]string{"spec.gang.shared.perMember: Invalid value", "spec.gang.shared.strategy: Unsupported value"}},
		{"negative per member", newJob("a").gpus(0).with(shared(SharedGPURequest{PerMember: -1})).obj(),
			[]string{"spec.gang.shared.perMember: Invalid value"}},
		{"shared gang asking for whole GPUs", newJob("a").gpus(0).gpuLimit(1).with(shared(SharedGPURequest{PerMember: 1})).obj(),
			[]string{"spec.template.spec.containers: Forbidden"}},
		{"role with shared and gpus", newJob("a").with(roles(
			Role{Name: "server", Members: 1, GPUsPerMember: 1, Shared: &SharedGPURequest{Strategy: "x"}})).obj(), []string{"spec.roles[0].gpusPerMember: Forbidden", "spec.roles[0].shared.strategy: Unsupported value"}},
		{"roles asking for shares and whole GPUs", newJob("a").with(roles(
			Role{Name: "server", Members: 1, Shared: &SharedGPURequest{PerMember: 1}},
			Role{Name: "worker", Members: 1, GPUsPerMember: 1})).obj(), []string{"spec.roles[1]: Invalid value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errStrings(ValidateJob(tc.job))
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSharedDefaultsAndResource(t *testing.T) {
	j := newJob("a").gpus(0).with(func(j *Job) { j.Spec.Gang.Shared = &SharedGPURequest{} }).obj()
	SetJobDefaults(j)
	if j.Spec.Gang.Shared.PerMember != 1 {
		t.Errorf("perMember = %d, want the default 1", j.Spec.Gang.Shared.PerMember)
	}
	if res, n := j.Spec.Gang.Resource(); res != ResourceGPUShared || n != 1 {
		t.Errorf("Resource = %s × %d, want %s × 1", res, n, ResourceGPUShared)
	}
	lim := j.Spec.Template.Spec.Containers[0].Resources.Limits
	if q := lim[ResourceGPUShared]; q.Value() != 1 || len(lim) != 1 {
		t.Errorf("template limits = %v, want %s: 1 alone", lim, ResourceGPUShared)
	}
	if p := j.Spec.ProcessesPerMember(); p != 1 {
		t.Errorf("ProcessesPerMember = %d, want 1", p)
	}
	if got := templateAccelerators(&j.Spec.Template); !slices.Equal(got, []string{string(ResourceGPUShared)}) {
		t.Errorf("templateAccelerators = %v", got)
	}
	r := Role{Shared: &SharedGPURequest{PerMember: 3}}
	if res, n := r.Resource(); res != ResourceGPUShared || n != 3 {
		t.Errorf("Role.Resource = %s × %d", res, n)
	}
}
