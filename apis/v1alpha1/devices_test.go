// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func devices(class string, exprs ...string) *DeviceRequest {
	d := &DeviceRequest{DeviceClassName: class}
	for _, e := range exprs {
		d.Selectors = append(d.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: e}})
	}
	return d
}

// TestValidateDevices: a device gang is valid with a class and selectors
// and no GPU limits; every mistake comes back in one list with its path.
func TestValidateDevices(t *testing.T) {
	tests := []struct {
		name string
		job  *Job
		want []string
	}{
		{"valid", newJob("a").with(func(j *Job) {
			j.Spec.Gang.Devices = devices("gpu.nvidia.com", `device.attributes["gpu.nvidia.com"].productName == "x"`)
		}).obj(), nil},
		{"class missing, empty selector, with mig", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb", PerMember: 1}
			j.Spec.Gang.Devices = &DeviceRequest{Selectors: []resourcev1.DeviceSelector{{}}}
		}).obj(), []string{"spec.gang.devices: Forbidden", "spec.gang.devices.deviceClassName: Required value",
			"spec.gang.devices.selectors[0].cel.expression: Required value"}},
		{"bad class name", newJob("a").with(func(j *Job) { j.Spec.Gang.Devices = devices("GPU Class") }).obj(),
			[]string{"spec.gang.devices.deviceClassName: Invalid value"}},
		{"GPU limits and claims of its own", newJob("a").with(func(j *Job) {
			j.Spec.Gang.Devices = devices("gpu.nvidia.com")
			j.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{ResourceGPU: resource.MustParse("8")}
			j.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "mine"}}
		}).obj(), []string{"spec.template.spec.containers: Forbidden", "spec.template.spec.resourceClaims: Forbidden"}},
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

// TestDefaultsLeaveDeviceGangsWithoutGPULimit: the member's claim carries
// its GPUs, so defaulting puts no nvidia.com/gpu limit on the template.
func TestDefaultsLeaveDeviceGangsWithoutGPULimit(t *testing.T) {
	j := newJob("a").gpus(2).obj()
	j.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	j.Spec.Gang.Devices = devices("gpu.nvidia.com")
	SetJobDefaults(j)
	if n := TemplateResource(&j.Spec.Template, ResourceGPU); n != 0 {
		t.Errorf("device gang's template got %d nvidia.com/gpu", n)
	}
	if errs := ValidateJob(j); len(errs) != 0 {
		t.Errorf("defaulted device gang invalid: %v", errs)
	}
}
