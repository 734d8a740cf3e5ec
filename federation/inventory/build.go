// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Build computes a cluster's GPU inventory from its Nodes and Pods. Nodes
// without any GPU or MIG resource are left out. Every non-terminated pod bound
// to a node counts against it, whoever created it. The result is sorted by
// node name, so the same input always gives the same Cluster. Generation and
// Labels are left for the caller.
func Build(cluster string, nodes []*corev1.Node, pods []*corev1.Pod, keys LabelKeys) Cluster {
	return BuildDRA(cluster, nodes, pods, keys, DRA{})
}

// BuildDRA is Build for a cluster that may publish GPUs by Dynamic Resource
// Allocation as well: a node's whole GPUs in the GPU driver's ResourceSlices
// count as its nvidia.com/gpu when a DeviceClass maps that extended resource
// to devices (DRA.ExtendedGPUClass), as the kube-scheduler then satisfies
// member pods' nvidia.com/gpu requests with them. Likewise its static MIG
// partitions count as its nvidia.com/mig-<profile> where a DeviceClass maps
// that resource to them (DRA.MIGNodes). Tainted devices are capacity, not
// allocatable; devices allocated by other ResourceClaims are used.
func BuildDRA(cluster string, nodes []*corev1.Node, pods []*corev1.Pod, keys LabelKeys, dra DRA) Cluster {
	used := usageByNode(pods)
	devices := dra.Nodes()
	migs := dra.MIGNodes()
	class, mapped := dra.ExtendedGPUClass()
	out := Cluster{Name: cluster, Gangs: gangMembers(pods)}
	for _, kn := range nodes {
		if kn == nil {
			continue
		}
		d := devices[kn.Name]
		m := migs[kn.Name]
		hasDRA := d.GPUs > 0 || len(m.Published) > 0
		n, ok := nodeFrom(kn, keys)
		if !ok && !hasDRA {
			continue
		}
		if !ok {
			n = nodeLabels(kn, keys)
		}
		if d.GPUs > 0 {
			addDRA(&n, d, class, mapped)
		}
		addDRAMIG(&n, m)
		u := used[n.Name]
		if sh := n.Shared; sh != nil {
			sh.Used = int(u[sh.Resource])
		}
		if !n.Shared.unrenamed() {
			n.UsedGPUs += int(u[ResourceGPU])
		}
		for r, m := range n.MIG {
			m.Used += int(u[r]) // on top of DRA partitions other claims hold
			n.MIG[r] = m
		}
		out.Nodes = append(out.Nodes, n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	return out
}

// addDRA adds a node's DRA GPUs: always as DRAGPUs, and as capacity,
// allocatable and used whole GPUs when class maps nvidia.com/gpu to devices.
// GFD labels, where present, win over the devices' product and memory.
func addDRA(n *Node, d DRANode, class *resourcev1.DeviceClass, mapped bool) {
	n.DRAGPUs = d.GPUs
	n.DRADevices = d.Devices
	if n.Product == "" {
		n.Product = d.Product
	}
	if n.MemoryMiB == 0 {
		n.MemoryMiB = d.MemoryMiB
	}
	if !mapped {
		return
	}
	n.DRAClass = class.Name
	n.CapacityGPUs += d.GPUs
	n.GPUs += d.GPUs - d.Tainted
	n.UsedGPUs += d.Used
}

// nodeFrom converts a Kubernetes Node; ok is false for a node with no GPUs.
func nodeFrom(kn *corev1.Node, keys LabelKeys) (Node, bool) {
	n := nodeLabels(kn, keys)
	if !IsGPUNode(kn) {
		return Node{}, false
	}
	n.GPUs = quantity(kn.Status.Allocatable, ResourceGPU)
	n.CapacityGPUs = quantity(kn.Status.Capacity, ResourceGPU)
	for name, q := range kn.Status.Allocatable {
		if strings.HasPrefix(string(name), ResourceMIGPrefix) && q.Value() > 0 {
			if n.MIG == nil {
				n.MIG = map[string]MIGResource{}
			}
			n.MIG[string(name)] = MIGResource{Allocatable: int(q.Value())}
		}
	}
	sharedFrom(kn, &n)
	return n, true
}

// nodeLabels returns the node's name, state, taints and what its labels say
// (GFD product and memory, topology), with no GPU counts.
func nodeLabels(kn *corev1.Node, keys LabelKeys) Node {
	l := kn.Labels
	n := Node{
		Name:          kn.Name,
		Product:       l[LabelGPUProduct],
		Unschedulable: kn.Spec.Unschedulable,
		Ready:         nodeReady(kn),
	}
	if keys.NVLink != "" {
		n.Clique = l[keys.NVLink]
	}
	if keys.Rack != "" {
		n.Rack = l[keys.Rack]
	}
	if keys.Block != "" {
		n.Block = l[keys.Block]
	}
	if keys.Zone != "" {
		n.Zone = l[keys.Zone]
	}
	for _, k := range v1alpha1.NodePoolLabelKeys {
		if v := l[k]; v != "" {
			n.NodePool = v
			break
		}
	}
	if mem, err := strconv.ParseInt(l[LabelGPUMemory], 10, 64); err == nil {
		n.MemoryMiB = mem
	}
	if len(kn.Spec.Taints) > 0 {
		n.Taints = append([]corev1.Taint(nil), kn.Spec.Taints...)
	}
	return n
}

// IsGPUNode reports whether Build keeps the node: it has whole-GPU capacity
// or allocatable, or an allocatable MIG slice or GPU share.
func IsGPUNode(kn *corev1.Node) bool {
	if quantity(kn.Status.Allocatable, ResourceGPU) > 0 || quantity(kn.Status.Capacity, ResourceGPU) > 0 ||
		quantity(kn.Status.Allocatable, ResourceGPUShared) > 0 {
		return true
	}
	for name, q := range kn.Status.Allocatable {
		if strings.HasPrefix(string(name), ResourceMIGPrefix) && q.Value() > 0 {
			return true
		}
	}
	return false
}

func quantity(rl corev1.ResourceList, name string) int {
	q, ok := rl[corev1.ResourceName(name)]
	if !ok {
		return 0
	}
	return int(q.Value())
}

func nodeReady(kn *corev1.Node) bool {
	for _, c := range kn.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// usageByNode sums GPU and MIG requests of non-terminated pods per node.
func usageByNode(pods []*corev1.Pod) map[string]map[string]int64 {
	used := map[string]map[string]int64{}
	for _, p := range pods {
		if p == nil || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for r, v := range PodGPURequests(p) {
			if used[p.Spec.NodeName] == nil {
				used[p.Spec.NodeName] = map[string]int64{}
			}
			used[p.Spec.NodeName][r] += v
		}
	}
	return used
}

// gangMembers counts the bound, non-terminated member pods of each Shoal
// gang (Cluster.Gangs): pods with the job label and an epoch, the pods
// usageByNode counts. Never nil.
func gangMembers(pods []*corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, p := range pods {
		if p == nil || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		job := p.Labels[v1alpha1.LabelJob]
		epoch := p.Labels[v1alpha1.LabelEpoch]
		if epoch == "" {
			epoch = p.Annotations[v1alpha1.AnnotationEpoch]
		}
		if job == "" || epoch == "" {
			continue
		}
		e, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			continue
		}
		out[GangKey(job, e)]++
	}
	return out
}

// PodGPURequests returns the pod's effective request of each GPU resource
// (whole GPUs, every MIG profile and GPU shares), the way the kube-scheduler computes it:
// per resource, the larger of the app containers plus sidecars and the
// largest init container plus the sidecars started before it. It is the one
// GPU-request rule of Shoal: the inventory counts used GPUs with it and the
// agent checks a gang member's fit with it. Resources the pod does not ask
// for are absent.
func PodGPURequests(p *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	sidecars := map[string]int64{}
	initPeak := map[string]int64{}
	for _, c := range p.Spec.InitContainers {
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		for r, v := range containerGPURequests(c) {
			if sidecar {
				sidecars[r] += v
				continue
			}
			initPeak[r] = max(initPeak[r], v+sidecars[r])
		}
	}
	for _, c := range p.Spec.Containers {
		for r, v := range containerGPURequests(c) {
			out[r] += v
		}
	}
	for r, v := range sidecars {
		out[r] += v
	}
	for r, v := range initPeak {
		out[r] = max(out[r], v)
	}
	return out
}

// containerGPURequests returns a container's GPU requests; an extended
// resource with only a limit is requested at its limit.
func containerGPURequests(c corev1.Container) map[string]int64 {
	var out map[string]int64
	add := func(rl corev1.ResourceList, onlyMissing bool) {
		for name, q := range rl {
			r := string(name)
			if !IsGPUResource(r) {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			if _, seen := out[r]; onlyMissing && seen {
				continue
			}
			out[r] = value(q)
		}
	}
	add(c.Resources.Requests, false)
	add(c.Resources.Limits, true)
	return out
}

func value(q resource.Quantity) int64 { return q.Value() }

// IsGPUResource reports whether r is a whole-GPU, MIG slice or GPU share resource.
func IsGPUResource(r string) bool {
	return r == ResourceGPU || r == ResourceGPUShared || strings.HasPrefix(r, ResourceMIGPrefix)
}
