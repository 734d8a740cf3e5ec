// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"crypto/sha1"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// DRAMIGLayout is one kind of static MIG layout the simulator publishes:
// GPUs GPUs (after the whole ones, by minor) each carved into PerGPU
// partitions of Profile, as NVIDIA's gpu-kubelet-plugin publishes MIG
// devices a MIG manager created (no shared counters: KEP-4815
// partitionable devices are not simulated).
type DRAMIGLayout struct {
	// Profile is the MIG profile ("1g.10gb").
	Profile string
	// GPUs is how many GPUs of a node are carved this way, PerGPU the
	// partitions of each.
	GPUs, PerGPU int
	// MemorySlices is the memory slices one partition spans (its placement
	// size: 1 for 1g.10gb, 4 for 3g.40gb on an A100 80GB).
	MemorySlices int
	// Memory is one partition's memory ("9728Mi").
	Memory string
	// Multiprocessors, CopyEngines and Decoders are the GPU instance
	// profile's engines (encoders, JPEG and OFA engines are 0 on the
	// profiles simulated).
	Multiprocessors, CopyEngines, Decoders int64
}

// DRAMIGDeviceClass is the DeviceClass mig-<profile>.nvidia.com the
// simulator installs for a MIG profile: the driver's partitions of that
// profile, mapped to the extended resource nvidia.com/mig-<profile>
// (spec.extendedResourceName), so that the kube-scheduler satisfies a
// member pod's nvidia.com/mig-<profile> request with one of them.
func DRAMIGDeviceClass(profile string) *resourcev1.DeviceClass {
	attr := `device.attributes['` + fedinv.DriverGPU + `'].`
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "mig-" + profile + ".nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == '` +
				fedinv.DriverGPU + `' && ` + attr + fedinv.DRAAttrType + ` == '` + fedinv.DRATypeMIG + `' && ` +
				attr + fedinv.DRAAttrProfile + ` == '` + profile + `'`}}},
			ExtendedResourceName: ptr.To(fedinv.ResourceMIGOf(profile)),
		},
	}
}

// DRADeviceClasses are the DeviceClasses the simulator installs for d:
// gpu.nvidia.com, and one per MIG profile of d's layouts.
func DRADeviceClasses(d *DRADevices) []*resourcev1.DeviceClass {
	out := []*resourcev1.DeviceClass{DRADeviceClass()}
	for _, l := range d.MIG {
		out = append(out, DRAMIGDeviceClass(l.Profile))
	}
	return out
}

// createMIGClasses installs the MIG profiles' DeviceClasses (existing ones
// are left as they are).
func createMIGClasses(ctx context.Context, cs kubernetes.Interface, d *DRADevices) error {
	for _, l := range d.MIG {
		c := DRAMIGDeviceClass(l.Profile)
		if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create DeviceClass %s: %w", c.Name, err)
		}
	}
	return nil
}

// draMIGDevices returns a node's MIG partitions as the GPU driver's
// kubelet plugin publishes them: devices gpu-<minor>-mig-<profile without
// dot>-<placement> (placement start, or start-end for a partition of several
// memory slices) with the attributes type (mig), uuid, parentUUID, profile
// and the parent's productName, brand, architecture, cudaComputeCapability,
// driverVersion, cudaDriverVersion and pcieBusID, and the capacities
// multiprocessors, copyEngines, decoders, encoders, jpegEngines,
// ofaEngines, memory and memorySlice<i>. The carved GPUs take the minors
// after the whole GPUs.
func draMIGDevices(node string, d *DRADevices) []resourcev1.Device {
	var out []resourcev1.Device
	minor := d.PerNode
	for _, l := range d.MIG {
		for range l.GPUs {
			parent := draGPU(node, minor, d)
			for i := range l.PerGPU {
				start := i * l.MemorySlices
				out = append(out, draMIGDevice(node, minor, start, l, parent))
			}
			minor++
		}
	}
	return out
}

func draMIGDevice(node string, minor, start int, l DRAMIGLayout, parent resourcev1.Device) resourcev1.Device {
	placement := fmt.Sprint(start)
	if l.MemorySlices > 1 {
		placement = fmt.Sprintf("%d-%d", start, start+l.MemorySlices-1)
	}
	name := fmt.Sprintf("gpu-%d-mig-%s-%s", minor, strings.ReplaceAll(l.Profile, ".", ""), placement)
	h := sha1.Sum(fmt.Appendf(nil, "%s/%s", node, name))
	attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		fedinv.DRAAttrType:       {StringValue: ptr.To(fedinv.DRATypeMIG)},
		fedinv.DRAAttrUUID:       {StringValue: ptr.To(fmt.Sprintf("MIG-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))},
		fedinv.DRAAttrParentUUID: parent.Attributes[fedinv.DRAAttrUUID],
		fedinv.DRAAttrProfile:    {StringValue: ptr.To(l.Profile)},
	}
	for _, k := range []resourcev1.QualifiedName{fedinv.DRAAttrProductName, "brand", "architecture",
		"cudaComputeCapability", "driverVersion", "cudaDriverVersion", "pcieBusID"} {
		attrs[k] = parent.Attributes[k]
	}
	q := func(v int64) resourcev1.DeviceCapacity {
		return resourcev1.DeviceCapacity{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	capacity := map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
		"multiprocessors":   q(l.Multiprocessors),
		"copyEngines":       q(l.CopyEngines),
		"decoders":          q(l.Decoders),
		"encoders":          q(0),
		"jpegEngines":       q(0),
		"ofaEngines":        q(0),
		fedinv.DRACapMemory: {Value: resource.MustParse(l.Memory)},
	}
	for i := start; i < start+l.MemorySlices; i++ {
		capacity[resourcev1.QualifiedName(fmt.Sprintf("memorySlice%d", i))] = q(1)
	}
	return resourcev1.Device{Name: name, Attributes: attrs, Capacity: capacity}
}
