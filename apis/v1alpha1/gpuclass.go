// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"strings"
)

// GPUClass names a set of GPU products for queue quotas (spec.quotas keys):
// a quota on a class bounds the whole GPUs a queue holds on nodes whose
// nvidia.com/gpu.product is one of Products. A product may belong to
// several classes (an A100-SXM4-80GB counts in a100 and a100-80gb), and a
// placement is charged to each of them. MIG slices have their own classes,
// "mig-<profile>" (mig-1g.10gb counts nvidia.com/mig-1g.10gb slices), which
// are not listed here: every valid MIG profile is one.
//
// This table is the one mapping from class to products; the validator,
// the scheduler and `shoal queue get` all read it.
type GPUClass struct {
	// Name is the key used in spec.quotas, e.g. h100.
	Name string
	// Products are the nvidia.com/gpu.product values (as NVIDIA GPU Feature
	// Discovery publishes them) whose GPUs the class counts.
	Products []string
}

// MIGClassPrefix prefixes the GPU class of a MIG profile: mig-1g.10gb.
const MIGClassPrefix = "mig-"

// SharedClass is the GPU class of shares of time-sliced or MPS GPUs
// (nvidia.com/gpu.shared): it counts shares, whatever the product.
const SharedClass = "shared"

// gpuClasses is the class table, sorted by name.
var gpuClasses = []GPUClass{
	{"a100", []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"}},
	{"a100-40gb", []string{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"}},
	{"a100-80gb", []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"}},
	{"a10g", []string{"NVIDIA-A10G"}},
	{"b200", []string{"NVIDIA-B200"}},
	{"gb200", []string{"NVIDIA-GB200"}},
	{"h100", []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-SXM5-80GB", "NVIDIA-H100-PCIe", "NVIDIA-H100-NVL", "NVIDIA-H100"}},
	{"h200", []string{"NVIDIA-H200", "NVIDIA-H200-141GB-HBM3e"}},
	{"l4", []string{"NVIDIA-L4"}},
	{"l40s", []string{"NVIDIA-L40S"}},
	{"t4", []string{"Tesla-T4"}},
}

// GPUClasses returns the whole-GPU classes and their products, sorted by
// name (a copy).
func GPUClasses() []GPUClass {
	out := make([]GPUClass, len(gpuClasses))
	for i, c := range gpuClasses {
		out[i] = GPUClass{Name: c.Name, Products: slices.Clone(c.Products)}
	}
	return out
}

// GPUClassNames returns the names of the whole-GPU classes and the MIG
// class pattern, for error messages.
func GPUClassNames() []string {
	out := make([]string, 0, len(gpuClasses)+1)
	for _, c := range gpuClasses {
		out = append(out, c.Name)
	}
	return append(out, MIGClassPrefix+"<profile> (e.g. mig-1g.10gb)", SharedClass)
}

// KnownGPUClass reports whether name is a class of the table, the class
// of a valid MIG profile, or the shared class.
func KnownGPUClass(name string) bool {
	if name == SharedClass {
		return true
	}
	if p, ok := strings.CutPrefix(name, MIGClassPrefix); ok {
		return migProfile.MatchString(p)
	}
	_, ok := slices.BinarySearchFunc(gpuClasses, name, func(c GPUClass, n string) int { return strings.Compare(c.Name, n) })
	return ok
}

// GPUClassesOfProduct returns the classes that count a GPU product's GPUs
// (none for a product the table does not know).
func GPUClassesOfProduct(product string) []string {
	var out []string
	for _, c := range gpuClasses {
		if slices.Contains(c.Products, product) {
			out = append(out, c.Name)
		}
	}
	return out
}

// GPUClassOfResource returns the class that counts a resource of slices or
// shares: the MIG class of a MIG resource (GPUClassOfMIG), SharedClass for
// nvidia.com/gpu.shared, and false for any other resource.
func GPUClassOfResource(resource string) (string, bool) {
	if resource == string(ResourceGPUShared) {
		return SharedClass, true
	}
	return GPUClassOfMIG(resource)
}

// GPUClassOfMIG returns the class of a MIG resource, "mig-1g.10gb" for
// nvidia.com/mig-1g.10gb, and false for any other resource.
func GPUClassOfMIG(resource string) (string, bool) {
	p, ok := strings.CutPrefix(resource, "nvidia.com/mig-")
	if !ok || !migProfile.MatchString(p) {
		return "", false
	}
	return MIGClassPrefix + p, true
}
