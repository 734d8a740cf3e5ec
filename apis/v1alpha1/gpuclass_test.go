// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestGPUClassTable(t *testing.T) {
	names := make([]string, 0, len(gpuClasses))
	for _, c := range GPUClasses() {
		names = append(names, c.Name)
		if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
			t.Errorf("class %q is not a valid quota key: %v", c.Name, msgs)
		}
		if strings.HasPrefix(c.Name, MIGClassPrefix) || len(c.Products) == 0 {
			t.Errorf("class %q: whole-GPU classes need products and no MIG prefix", c.Name)
		}
		if !KnownGPUClass(c.Name) {
			t.Errorf("KnownGPUClass(%q) = false", c.Name)
		}
		for _, p := range c.Products {
			if !slices.Contains(GPUClassesOfProduct(p), c.Name) {
				t.Errorf("GPUClassesOfProduct(%q) misses %q", p, c.Name)
			}
		}
	}
	if !slices.IsSorted(names) {
		t.Fatalf("class table not sorted by name: %v", names)
	}
}

func TestGPUClassLookups(t *testing.T) {
	if got := GPUClassesOfProduct("NVIDIA-A100-SXM4-80GB"); !slices.Equal(got, []string{"a100", "a100-80gb"}) {
		t.Errorf("A100-SXM4-80GB classes = %v", got)
	}
	if got := GPUClassesOfProduct("NVIDIA-H100-80GB-HBM3"); !slices.Equal(got, []string{"h100"}) {
		t.Errorf("H100 classes = %v", got)
	}
	if got := GPUClassesOfProduct("Unknown-GPU"); got != nil {
		t.Errorf("unknown product classes = %v", got)
	}
	for name, want := range map[string]bool{"h100": true, "mig-1g.10gb": true, "mig-3g.40gb": true,
		"h1000": false, "mig-": false, "mig-1g": false, "": false} {
		if got := KnownGPUClass(name); got != want {
			t.Errorf("KnownGPUClass(%q) = %v, want %v", name, got, want)
		}
	}
	if c, ok := GPUClassOfMIG("nvidia.com/mig-2g.20gb"); !ok || c != "mig-2g.20gb" {
		t.Errorf("GPUClassOfMIG = %q, %v", c, ok)
	}
	if _, ok := GPUClassOfMIG("nvidia.com/gpu"); ok {
		t.Error("nvidia.com/gpu has a MIG class")
	}
}
