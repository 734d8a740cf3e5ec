// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The names of NVIDIA's DRA driver for GPUs (k8s-dra-driver-gpu) that the
// inventory reads from ResourceSlices.
const (
	// DriverGPU is the driver (and DeviceClass) name of NVIDIA's GPU DRA driver.
	DriverGPU = "gpu.nvidia.com"
	// DRAAttrType is the device attribute telling a whole GPU ("gpu") from a
	// MIG partition ("mig").
	DRAAttrType = "type"
	// DRAAttrProductName is the NVML product name ("NVIDIA H100 80GB HBM3").
	DRAAttrProductName = "productName"
	// DRAAttrUUID is the GPU's (or MIG device's) UUID.
	DRAAttrUUID = "uuid"
	// DRAAttrProfile is a MIG partition's profile ("1g.10gb").
	DRAAttrProfile = "profile"
	// DRACapMemory is the device capacity holding its memory in bytes.
	DRACapMemory = "memory"
	// DRATypeGPU and DRATypeMIG are the values of DRAAttrType.
	DRATypeGPU = "gpu"
	DRATypeMIG = "mig"
	// DRAExtendedResourceClaimAnnotation marks the ResourceClaim the
	// kube-scheduler makes for a pod whose extended resource request a
	// DeviceClass (spec.extendedResourceName) satisfies with devices.
	DRAExtendedResourceClaimAnnotation = resourcev1.ExtendedResourceClaimAnnotation
)

// DRA is what a cluster's Dynamic Resource Allocation objects say about its
// GPUs: the drivers' ResourceSlices, the ResourceClaims (their allocations
// are the devices in use) and the DeviceClasses.
type DRA struct {
	Slices  []*resourcev1.ResourceSlice
	Claims  []*resourcev1.ResourceClaim
	Classes []*resourcev1.DeviceClass
}

// DRANode is what the GPU driver's ResourceSlices publish for one node.
type DRANode struct {
	// Product and MemoryMiB are those of the node's first whole GPU (by device name).
	Product   string
	MemoryMiB int64
	// GPUs counts the whole GPUs (type gpu), Tainted those of them with a
	// NoSchedule or NoExecute device taint, Used those of them allocated by a
	// ResourceClaim other than the kube-scheduler's extended-resource claims
	// (those pods are counted by their nvidia.com/gpu requests), sharing a
	// counter set with an allocated device, or the parent (parentUUID) of an
	// allocated MIG partition; a partition allocated by an extended-resource
	// claim counts here too (MIGNodes never offers a partition sharing
	// counters with, or carved from, a published whole GPU).
	GPUs, Tainted, Used int
	// MIG counts the MIG partitions per profile (type mig), whatever their state.
	MIG map[string]int
	// Devices is what the node's whole GPUs have in common, for matching
	// device requests (nil without whole GPUs).
	Devices *DRADevices
}

// DRADevices describes a node's whole GPUs as the GPU driver publishes
// them, for the hub to match a job's device request (a DeviceClass and CEL
// selectors) against the node: the attributes and capacities that every
// whole GPU of the node has with the same value (one that differs between
// two of them, such as uuid or pcieBusID, is left out, so a selector on it
// matches no node), and the DeviceClasses that select those GPUs.
type DRADevices struct {
	// Driver is the driver publishing the GPUs (gpu.nvidia.com).
	Driver string `json:"driver"`
	// Attributes are the common attributes by their name in the slice
	// (unqualified names belong to the driver's domain).
	Attributes map[string]resourcev1.DeviceAttribute `json:"attributes,omitempty"`
	// Capacity holds the common capacities (memory, in bytes).
	Capacity map[string]resource.Quantity `json:"capacity,omitempty"`
	// Classes are the DeviceClasses whose selectors match these GPUs,
	// sorted (the agent evaluates them: federation/devicesel).
	Classes []string `json:"classes,omitempty"`
}

// ExtendedGPUClass returns the DeviceClass whose spec.extendedResourceName
// is nvidia.com/gpu: through it the kube-scheduler satisfies a pod's
// nvidia.com/gpu request with devices, so a member pod asking for whole GPUs
// starts on a DRA-only node. ok is false when no class maps the resource.
// Like the kube-scheduler, the newest class wins, then the first by name.
func (d DRA) ExtendedGPUClass() (*resourcev1.DeviceClass, bool) {
	return d.ExtendedClass(ResourceGPU)
}

type deviceKey struct{ driver, pool, device string }

type draDevice struct {
	node     string
	name     string
	gpu      bool
	profile  string
	product  string
	memory   int64
	tainted  bool
	counters []string // counter sets the device consumes from, pool-qualified
	attrs    map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
	capacity map[resourcev1.QualifiedName]resourcev1.DeviceCapacity
}

// Nodes returns the GPU driver's devices per node name. Only slices of a
// pool's newest generation count (older ones are being replaced), and only
// slices bound to one node (spec.nodeName): network-attached devices are
// not node GPUs.
func (d DRA) Nodes() map[string]DRANode {
	devices := d.devices()
	allocated := d.allocated()
	// Partitions any claim holds (MIG) make the GPUs they share counters
	// with, or are carved from, used (dra_mig.go migHolds).
	usedSets, usedParents := d.migHolds(devices)
	for k := range allocated {
		if dev, ok := devices[k]; ok {
			for _, s := range dev.counters {
				usedSets[s] = true
			}
		}
	}
	out := map[string]DRANode{}
	first := map[string]string{} // node -> name of the device Product came from
	for k, dev := range devices {
		n := out[dev.node]
		if !dev.gpu {
			if dev.profile != "" {
				if n.MIG == nil {
					n.MIG = map[string]int{}
				}
				n.MIG[dev.profile]++
			}
			out[dev.node] = n
			continue
		}
		n.GPUs++
		if dev.tainted {
			n.Tainted++
		}
		if allocated[k] || sharesUsedSet(dev, usedSets) || usedParents[attrString(dev.attrs, DRAAttrUUID)] {
			n.Used++
		}
		if f, seen := first[dev.node]; !seen || dev.name < f {
			first[dev.node] = dev.name
			n.Product, n.MemoryMiB = dev.product, dev.memory
		}
		n.Devices = common(n.Devices, dev)
		out[dev.node] = n
	}
	return out
}

// Key is a text equal for two DRADevices exactly when they are equal: the
// driver, every attribute and capacity by name, and the classes.
func (d *DRADevices) Key() string {
	var b strings.Builder
	b.WriteString(d.Driver)
	for _, k := range slices.Sorted(maps.Keys(d.Attributes)) {
		a := d.Attributes[k]
		fmt.Fprintf(&b, "\x00a:%s=", k)
		switch {
		case a.StringValue != nil:
			fmt.Fprintf(&b, "s%q", *a.StringValue)
		case a.IntValue != nil:
			fmt.Fprintf(&b, "i%d", *a.IntValue)
		case a.BoolValue != nil:
			fmt.Fprintf(&b, "b%t", *a.BoolValue)
		case a.VersionValue != nil:
			fmt.Fprintf(&b, "v%q", *a.VersionValue)
		default:
			fmt.Fprintf(&b, "l%q%v%v%q", a.StringValues, a.IntValues, a.BoolValues, a.VersionValues)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Capacity)) {
		q := d.Capacity[k]
		fmt.Fprintf(&b, "\x00c:%s=%s", k, q.String())
	}
	fmt.Fprintf(&b, "\x00%q", d.Classes)
	return b.String()
}

// common narrows d (nil: no GPU seen yet) to what it shares with dev.
func common(d *DRADevices, dev draDevice) *DRADevices {
	if d == nil {
		d = &DRADevices{Driver: DriverGPU, Attributes: map[string]resourcev1.DeviceAttribute{},
			Capacity: map[string]resource.Quantity{}}
		for k, v := range dev.attrs {
			d.Attributes[string(k)] = v
		}
		for k, v := range dev.capacity {
			d.Capacity[string(k)] = v.Value
		}
		return d
	}
	for k, v := range d.Attributes {
		if o, ok := dev.attrs[resourcev1.QualifiedName(k)]; !ok || !equality.Semantic.DeepEqual(o, v) {
			delete(d.Attributes, k)
		}
	}
	for k, v := range d.Capacity {
		if o, ok := dev.capacity[resourcev1.QualifiedName(k)]; !ok || o.Value.Cmp(v) != 0 {
			delete(d.Capacity, k)
		}
	}
	return d
}

func sharesUsedSet(dev draDevice, used map[string]bool) bool {
	for _, s := range dev.counters {
		if used[s] {
			return true
		}
	}
	return false
}

// devices returns the GPU driver's node-local devices of each pool's newest generation.
func (d DRA) devices() map[deviceKey]draDevice {
	newest := map[string]int64{}
	for _, s := range d.Slices {
		if s != nil && s.Spec.Driver == DriverGPU {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	out := map[deviceKey]draDevice{}
	for _, s := range d.Slices {
		if s == nil || s.Spec.Driver != DriverGPU || s.Spec.NodeName == nil || *s.Spec.NodeName == "" ||
			s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		for i := range s.Spec.Devices {
			dv := &s.Spec.Devices[i]
			dev := draDevice{node: *s.Spec.NodeName, name: dv.Name, attrs: dv.Attributes, capacity: dv.Capacity}
			switch str(dv, DRAAttrType) {
			case DRATypeGPU:
				dev.gpu = true
			case DRATypeMIG:
				dev.profile = str(dv, DRAAttrProfile)
			default:
				continue // vfio and other device types are not schedulable GPUs
			}
			dev.product = strings.ReplaceAll(strings.TrimSpace(str(dv, DRAAttrProductName)), " ", "-")
			if q, ok := dv.Capacity[DRACapMemory]; ok {
				dev.memory = q.Value.Value() / (1 << 20)
			}
			for _, t := range dv.Taints {
				if t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute {
					dev.tainted = true
				}
			}
			for _, c := range dv.ConsumesCounters {
				dev.counters = append(dev.counters, s.Spec.Pool.Name+"/"+c.CounterSet)
			}
			out[deviceKey{DriverGPU, s.Spec.Pool.Name, dv.Name}] = dev
		}
	}
	return out
}

// allocated returns the GPU driver's devices allocated by claims other than
// the kube-scheduler's extended-resource claims.
func (d DRA) allocated() map[deviceKey]bool {
	out := map[deviceKey]bool{}
	for _, c := range d.Claims {
		if c == nil || c.Status.Allocation == nil || c.Annotations[DRAExtendedResourceClaimAnnotation] == "true" {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == DriverGPU {
				out[deviceKey{r.Driver, r.Pool, r.Device}] = true
			}
		}
	}
	return out
}

func str(dv *resourcev1.Device, name string) string {
	a, ok := dv.Attributes[resourcev1.QualifiedName(name)]
	if !ok {
		a, ok = dv.Attributes[resourcev1.QualifiedName(DriverGPU+"/"+name)]
	}
	if !ok || a.StringValue == nil {
		return ""
	}
	return *a.StringValue
}

// ExtendedGPUs returns what the node's DRA GPUs add to its nvidia.com/gpu:
// the untainted whole GPUs (none without an ExtendedGPUClass) and how many
// of them claims other than the kube-scheduler's extended-resource claims
// hold. The agent's gang gate and node health checks add them to the node's
// allocatable nvidia.com/gpu, as BuildDRA does.
func (d DRA) ExtendedGPUs(node string) (allocatable, used int64) {
	if _, ok := d.ExtendedGPUClass(); !ok {
		return 0, 0
	}
	n := d.Nodes()[node]
	return int64(n.GPUs - n.Tainted), int64(n.Used)
}
