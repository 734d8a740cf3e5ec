// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// DRAAttrParentUUID is a MIG partition's attribute naming the UUID of the
// GPU it is carved from.
const DRAAttrParentUUID = "parentUUID"

// ResourceMIGOf is the extended resource of a MIG profile: nvidia.com/mig-1g.10gb for 1g.10gb.
func ResourceMIGOf(profile string) string { return ResourceMIGPrefix + profile }

// DRAMIGNode is what the GPU driver's ResourceSlices publish as MIG
// partitions (devices with type mig) on one node.
type DRAMIGNode struct {
	// Published counts every partition per MIG resource
	// (nvidia.com/mig-<profile>), whatever its state.
	Published map[string]int
	// Offered are the MIG shapes the partitions give (see MIGNodes):
	// Allocatable counts the untainted offered partitions, Used those of them
	// allocated by a ResourceClaim other than the kube-scheduler's
	// extended-resource claims (those pods are counted by their
	// nvidia.com/mig-* requests).
	Offered map[string]MIGResource
	// Classes names the DeviceClass mapping each offered resource.
	Classes map[string]string
	// Product is the parent GPU's productName of the node's first partition
	// (by device name), spaces as dashes.
	Product string
}

// ExtendedClass returns the DeviceClass whose spec.extendedResourceName is
// resource: through it the kube-scheduler satisfies a pod's request of that
// extended resource with devices the class selects. Like the
// kube-scheduler, the newest class wins, then the first by name. ok is
// false when no class maps the resource.
func (d DRA) ExtendedClass(resource string) (*resourcev1.DeviceClass, bool) {
	var best *resourcev1.DeviceClass
	for _, c := range d.Classes {
		if c == nil || c.DeletionTimestamp != nil || c.Spec.ExtendedResourceName == nil ||
			*c.Spec.ExtendedResourceName != resource {
			continue
		}
		if best == nil || c.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(c.CreationTimestamp.Equal(&best.CreationTimestamp) && c.Name < best.Name) {
			best = c
		}
	}
	return best, best != nil
}

// MIGNodes returns the GPU driver's MIG partitions per node name (from the
// same slices as Nodes). A partition of profile P is offered as the MIG
// shape nvidia.com/mig-P only when all of these hold:
//
//   - a DeviceClass maps nvidia.com/mig-P (spec.extendedResourceName; the
//     newest such class, as the kube-scheduler picks it) and its CEL
//     selectors select the partition: a member pod's nvidia.com/mig-P
//     request is then satisfied with such partitions;
//   - the partition consumes no counter set that another device consumes
//     too (KEP-4815 partitionable devices: the partitions of one GPU
//     overlap each other and the whole GPU, and the hub books per-resource
//     counts, not counters, so it could book one GPU twice);
//   - its parent GPU (parentUUID) is not published as a whole GPU (which
//     the hub may book as nvidia.com/gpu).
//
// So the partitions offered are the static layout a MIG manager
// configured; every other partition stays reported only (Published), and
// an allocated one makes its GPU used (Nodes).
func (d DRA) MIGNodes() map[string]DRAMIGNode {
	devices := d.devices()
	consumers := map[string]int{} // counter set -> devices consuming from it
	wholeGPUs := map[string]bool{}
	for _, dev := range devices {
		for _, s := range dev.counters {
			consumers[s]++
		}
		if dev.gpu {
			if u := attrString(dev.attrs, DRAAttrUUID); u != "" {
				wholeGPUs[u] = true
			}
		}
	}
	allocated := d.allocated()
	classes := map[string]*resourcev1.DeviceClass{}
	out := map[string]DRAMIGNode{}
	first := map[string]string{} // node -> name of the partition Product came from
	for k, dev := range devices {
		if dev.gpu || dev.profile == "" {
			continue
		}
		r := ResourceMIGOf(dev.profile)
		n := out[dev.node]
		if n.Published == nil {
			n.Published = map[string]int{}
		}
		n.Published[r]++
		if f, seen := first[dev.node]; dev.product != "" && (!seen || dev.name < f) {
			first[dev.node] = dev.name
			n.Product = dev.product
		}
		class, known := classes[r]
		if !known {
			class, _ = d.ExtendedClass(r)
			classes[r] = class
		}
		if class != nil && !sharesCounters(dev, consumers) && !wholeGPUs[attrString(dev.attrs, DRAAttrParentUUID)] &&
			classSelects(class, dev) {
			if n.Offered == nil {
				n.Offered, n.Classes = map[string]MIGResource{}, map[string]string{}
			}
			m := n.Offered[r]
			if !dev.tainted {
				m.Allocatable++
				if allocated[k] {
					m.Used++
				}
			}
			n.Offered[r] = m
			n.Classes[r] = class.Name
		}
		out[dev.node] = n
	}
	return out
}

// ExtendedMIG returns the MIG shapes the node's DRA partitions add to its
// nvidia.com/mig-* resources (MIGNodes' Offered): per resource, the
// untainted partitions a mapping class serves and how many of them claims
// other than the kube-scheduler's extended-resource claims hold. The
// agent's gang gate and node health checks add them to the node's
// allocatable, as BuildDRA does; ExtendedGPUs is the same for whole GPUs.
func (d DRA) ExtendedMIG(node string) map[string]MIGResource {
	return d.MIGNodes()[node].Offered
}

// migHolds returns the counter sets and parent GPU UUIDs of the MIG
// partitions any ResourceClaim holds, the kube-scheduler's extended-resource
// claims included: a whole GPU sharing one of those sets, or whose UUID is
// one of those parents, is used. (An offered partition shares neither with a
// whole GPU, so its extended-resource claim, counted by its pod's request,
// is not counted twice.)
func (d DRA) migHolds(devices map[deviceKey]draDevice) (sets, parents map[string]bool) {
	sets, parents = map[string]bool{}, map[string]bool{}
	for _, c := range d.Claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			dev, ok := devices[deviceKey{r.Driver, r.Pool, r.Device}]
			if r.Driver != DriverGPU || !ok || dev.gpu {
				continue
			}
			for _, s := range dev.counters {
				sets[s] = true
			}
			if p := attrString(dev.attrs, DRAAttrParentUUID); p != "" {
				parents[p] = true
			}
		}
	}
	return sets, parents
}

// sharesCounters reports whether dev consumes a counter set another device consumes too.
func sharesCounters(dev draDevice, consumers map[string]int) bool {
	for _, s := range dev.counters {
		if consumers[s] > 1 {
			return true
		}
	}
	return false
}

func attrString(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, name string) string {
	a, ok := attrs[resourcev1.QualifiedName(name)]
	if !ok {
		a, ok = attrs[resourcev1.QualifiedName(DriverGPU+"/"+name)]
	}
	if !ok || a.StringValue == nil {
		return ""
	}
	return *a.StringValue
}

// celCompiled caches compiled class selectors by their text.
var celCompiled sync.Map // string -> dracel.CompilationResult

// classSelects reports whether every selector of class is true on dev, as
// the kube-scheduler's DRA allocator evaluates them (the library it uses).
// A selector that is not CEL, does not compile or fails to evaluate selects
// nothing.
func classSelects(class *resourcev1.DeviceClass, dev draDevice) bool {
	d := dracel.Device{Driver: DriverGPU, Attributes: dev.attrs, Capacity: dev.capacity}
	for _, s := range class.Spec.Selectors {
		if s.CEL == nil {
			return false
		}
		r, ok := celCompiled.Load(s.CEL.Expression)
		if !ok {
			r = dracel.GetCompiler(dracel.Features{}).CompileCELExpression(s.CEL.Expression, dracel.Options{})
			celCompiled.Store(s.CEL.Expression, r)
		}
		res := r.(dracel.CompilationResult)
		if res.Error != nil {
			return false
		}
		if match, _, err := res.DeviceMatches(context.Background(), d); err != nil || !match {
			return false
		}
	}
	return true
}

// addDRAMIG adds a node's DRA MIG partitions: always as DRAMIG, and the
// offered ones as the node's MIG shapes (their pods' requests are added
// by BuildDRA). The partitions' product serves a node without whole GPUs.
func addDRAMIG(n *Node, m DRAMIGNode) {
	if len(m.Published) == 0 {
		return
	}
	n.DRAMIG = m.Published
	if n.Product == "" {
		n.Product = m.Product
	}
	for _, r := range sortedKeys(m.Offered) {
		if n.MIG == nil {
			n.MIG = map[string]MIGResource{}
		}
		cur, o := n.MIG[r], m.Offered[r]
		n.MIG[r] = MIGResource{Allocatable: cur.Allocatable + o.Allocatable, Used: cur.Used + o.Used}
	}
	if len(m.Classes) > 0 {
		n.DRAMIGClasses = m.Classes
	}
}
