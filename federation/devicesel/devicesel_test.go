// SPDX-License-Identifier: Apache-2.0

package devicesel

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

const (
	h100Memory80 = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0`
	isH100       = `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`
	isGPU        = `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`
)

func gpus(product, memory string, classes ...string) *inventory.DRADevices {
	return &inventory.DRADevices{Driver: inventory.DriverGPU,
		Attributes: map[string]resourcev1.DeviceAttribute{
			"type":        {StringValue: ptr.To("gpu")},
			"productName": {StringValue: ptr.To(product)},
		},
		Capacity: map[string]resource.Quantity{"memory": resource.MustParse(memory)},
		Classes:  classes}
}

func sel(exprs ...string) []resourcev1.DeviceSelector {
	var out []resourcev1.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: e}})
	}
	return out
}

func TestRequestMatches(t *testing.T) {
	h100 := gpus("NVIDIA H100 80GB HBM3", "81559Mi", "gpu.nvidia.com")
	a100 := gpus("NVIDIA A100-SXM4-40GB", "40Gi", "gpu.nvidia.com")
	otherClass := gpus("NVIDIA H100 80GB HBM3", "81559Mi", "other")
	tests := []struct {
		name string
		req  v1alpha1.DeviceRequest
		d    *inventory.DRADevices
		want bool
	}{
		{"class only", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com"}, a100, true},
		{"memory at least 80G: H100 80GB (81559Mi)", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(h100Memory80)}, h100, true},
		{"memory at least 80G: A100 40GB", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(h100Memory80)}, a100, false},
		{"every selector must match", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(h100Memory80, `device.attributes["gpu.nvidia.com"].productName == "B200"`)}, h100, false},
		{"product and memory", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(isH100, h100Memory80)}, h100, true},
		{"class that does not select the GPUs", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com"}, otherClass, false},
		{"an attribute the GPUs lack matches nothing", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(`device.attributes["gpu.nvidia.com"].uuid == "GPU-1"`)}, h100, false},
		{"no DRA GPUs", v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewRequest(&tt.req).Matches(tt.d); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
	if NewRequest(nil) != nil {
		t.Error("NewRequest(nil) is not nil")
	}
}

func TestValidateCompilesSelectors(t *testing.T) {
	p := field.NewPath("spec", "gang", "devices")
	if errs := Validate(&v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(h100Memory80, isH100)}, p); len(errs) != 0 {
		t.Fatalf("valid selectors refused: %v", errs)
	}
	errs := Validate(&v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: sel(isH100, `device.attributes[`, `"not a bool"`)}, p)
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2 (a syntax error and a non-boolean): %v", len(errs), errs)
	}
	if errs[0].Field != "spec.gang.devices.selectors[1].cel.expression" || errs[1].Field != "spec.gang.devices.selectors[2].cel.expression" {
		t.Errorf("fields = %s, %s", errs[0].Field, errs[1].Field)
	}
	if !strings.Contains(errs[0].Detail, "compilation failed") {
		t.Errorf("detail = %q", errs[0].Detail)
	}
}

func TestClassesSelecting(t *testing.T) {
	class := func(name string, exprs ...string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.DeviceClassSpec{Selectors: sel(exprs...)}}
	}
	deleting := class("deleting")
	deleting.DeletionTimestamp = &metav1.Time{}
	classes := []*resourcev1.DeviceClass{
		class("gpu.nvidia.com", isGPU),
		class("big", h100Memory80),
		class("any"),
		class("mig.nvidia.com", `device.attributes["gpu.nvidia.com"].type == "mig"`),
		deleting,
	}
	got := ClassesSelecting(classes, gpus("NVIDIA H100 80GB HBM3", "81559Mi"))
	if strings.Join(got, ",") != "any,big,gpu.nvidia.com" {
		t.Errorf("H100 classes = %v", got)
	}
	got = ClassesSelecting(classes, gpus("NVIDIA A100-SXM4-40GB", "40Gi"))
	if strings.Join(got, ",") != "any,gpu.nvidia.com" {
		t.Errorf("A100 classes = %v", got)
	}
	c := inventory.Cluster{Nodes: []inventory.Node{{Name: "a", DRADevices: gpus("NVIDIA A100-SXM4-40GB", "40Gi")}, {Name: "plain"},
		{Name: "b", DRADevices: gpus("NVIDIA A100-SXM4-40GB", "40Gi")}}}
	SetClasses(&c, classes)
	if strings.Join(c.Nodes[0].DRADevices.Classes, ",") != "any,gpu.nvidia.com" || strings.Join(c.Nodes[2].DRADevices.Classes, ",") != "any,gpu.nvidia.com" {
		t.Errorf("SetClasses: %v, %v", c.Nodes[0].DRADevices.Classes, c.Nodes[2].DRADevices.Classes)
	}
}
