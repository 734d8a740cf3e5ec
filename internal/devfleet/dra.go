// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"crypto/sha1"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// DRADevices describes the GPUs a profile's driver simulator publishes per
// node, with the attributes NVIDIA's DRA driver (k8s-dra-driver-gpu,
// gpu-kubelet-plugin deviceinfo.go) gives a whole GPU.
type DRADevices struct {
	// PerNode is the number of whole GPUs on each node.
	PerNode int
	// ProductName is NVML's name ("NVIDIA H100 80GB HBM3"), Architecture its
	// family ("Hopper"), ComputeCapability and the versions semver strings.
	ProductName, Architecture, ComputeCapability string
	DriverVersion, CUDADriverVersion             string
	// Memory is one GPU's memory ("81559Mi").
	Memory string
	// MIG are the node's GPUs carved into static MIG partitions, published
	// besides the PerNode whole GPUs (dra_mig.go).
	MIG []DRAMIGLayout
}

// draClassSelector is the CEL selector of the driver's gpu.nvidia.com
// DeviceClass: the driver's whole GPUs, not its MIG partitions.
const draClassSelector = `device.driver == '` + fedinv.DriverGPU + `' && device.attributes['` +
	fedinv.DriverGPU + `'].` + fedinv.DRAAttrType + ` == '` + fedinv.DRATypeGPU + `'`

// DRADeviceClass is the DeviceClass gpu.nvidia.com the simulator installs:
// the driver's whole GPUs, mapped to the extended resource nvidia.com/gpu
// (spec.extendedResourceName) so that the kube-scheduler satisfies a pod's
// nvidia.com/gpu request with devices: Shoal's member pods ask for whole GPUs
// that way on every cluster.
func DRADeviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: fedinv.DriverGPU},
		Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: draClassSelector}}},
			ExtendedResourceName: ptr.To(fedinv.ResourceGPU),
		},
	}
}

// BuildResourceSlices returns the ResourceSlice of each node as the GPU
// driver's kubelet plugin publishes it: driver gpu.nvidia.com, one pool per
// node named after it, devices gpu-<minor> with type, uuid, productName,
// brand, architecture, cudaComputeCapability, driverVersion,
// cudaDriverVersion and pcieBusID attributes and a memory capacity.
func BuildResourceSlices(nodes []*corev1.Node, d *DRADevices) []*resourcev1.ResourceSlice {
	out := make([]*resourcev1.ResourceSlice, 0, len(nodes))
	for _, n := range nodes {
		s := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + fedinv.DriverGPU},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   fedinv.DriverGPU,
				NodeName: ptr.To(n.Name),
				Pool:     resourcev1.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for i := range d.PerNode {
			s.Spec.Devices = append(s.Spec.Devices, draGPU(n.Name, i, d))
		}
		s.Spec.Devices = append(s.Spec.Devices, draMIGDevices(n.Name, d)...)
		out = append(out, s)
	}
	return out
}

func draGPU(node string, minor int, d *DRADevices) resourcev1.Device {
	sv := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: ptr.To(s)} }
	vv := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{VersionValue: ptr.To(s)} }
	return resourcev1.Device{
		Name: fmt.Sprintf("gpu-%d", minor),
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			fedinv.DRAAttrType:        sv(fedinv.DRATypeGPU),
			fedinv.DRAAttrUUID:        sv(gpuUUID(node, minor)),
			fedinv.DRAAttrProductName: sv(d.ProductName),
			"brand":                   sv("Nvidia"),
			"architecture":            sv(d.Architecture),
			"cudaComputeCapability":   vv(d.ComputeCapability),
			"driverVersion":           vv(d.DriverVersion),
			"cudaDriverVersion":       vv(d.CUDADriverVersion),
			"pcieBusID":               sv(fmt.Sprintf("0000:%02x:00.0", 0x18+minor*0x10)),
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			fedinv.DRACapMemory: {Value: resource.MustParse(d.Memory)},
		},
	}
}

// gpuUUID is a stable GPU-<uuid> for one GPU of one node.
func gpuUUID(node string, minor int) string {
	h := sha1.Sum(fmt.Appendf(nil, "%s/gpu/%d", node, minor))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// PublishDRA is the profile's driver simulator: it installs the
// DeviceClasses (DRADeviceClasses) and publishes every node's ResourceSlice (existing ones are left as they are).
func PublishDRA(ctx context.Context, cs kubernetes.Interface, nodes []*corev1.Node, d *DRADevices) error {
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, DRADeviceClass(), metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DeviceClass %s: %w", fedinv.DriverGPU, err)
	}
	if err := createMIGClasses(ctx, cs, d); err != nil {
		return err
	}
	for _, s := range BuildResourceSlices(nodes, d) {
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
		}
	}
	return nil
}
