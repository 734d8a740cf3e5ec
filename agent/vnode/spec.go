// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// maxPods bounds the pods the hub may bind to one virtual node.
const maxPods = 100000

// nodeSpec is the virtual node of a pool as first registered, its kubelet
// endpoint on port.
func (m *Manager) nodeSpec(p fedinv.Pool, port int32) *corev1.Node {
	name := v1alpha1.VirtualNodeName(m.cfg.Cluster, p.Name)
	labels := map[string]string{}
	for k, v := range m.cfg.Labels { // cluster labels, when they are valid node labels
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}
	for k, v := range map[string]string{
		"type": "virtual-kubelet", "kubernetes.io/role": "agent", corev1.LabelHostname: name,
		corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		v1alpha1.LabelCluster: m.cfg.Cluster, v1alpha1.LabelVirtual: "true", v1alpha1.LabelPool: p.Name,
	} {
		labels[k] = v
	}
	if len(validation.IsValidLabelValue(p.Product)) == 0 && p.Product != "" {
		labels[fedinv.LabelGPUProduct] = p.Product
	}
	if p.MemoryMiB > 0 {
		labels[fedinv.LabelGPUMemory] = strconv.FormatInt(p.MemoryMiB, 10)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintVirtual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}}
	m.setStatus(n, p, 0, true, "")
	return n
}

// setStatus writes the pool's capacity, its per-shape detail and the Ready
// condition into n; held is what the node's member pods request of the
// pool's resource (see allocatable).
func (m *Manager) setStatus(n *corev1.Node, p fedinv.Pool, held int, ready bool, msg string) {
	q := func(v int) resource.Quantity { return *resource.NewQuantity(int64(v), resource.DecimalSI) }
	res := corev1.ResourceName(p.Resource)
	n.Status.Capacity = corev1.ResourceList{res: q(p.Capacity), corev1.ResourcePods: q(maxPods)}
	n.Status.Allocatable = corev1.ResourceList{res: q(allocatable(p, held)), corev1.ResourcePods: q(maxPods)}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	for k, v := range poolAnnotations(p) {
		n.Annotations[k] = v
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: m.cfg.Address}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "shoal-agent/" + m.cfg.Version, OperatingSystem: "linux", Architecture: "amd64"}
	n.Status.Phase = corev1.NodeRunning
	rs, reason, text := corev1.ConditionTrue, "AgentReady", "the Shoal agent reaches its workload cluster"
	if !ready {
		rs, reason, text = corev1.ConditionFalse, v1alpha1.ReasonWorkloadClusterUnreachable, "the Shoal agent cannot reach its workload cluster: "+msg
	}
	conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: rs, Reason: reason, Message: text}}
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "AgentReady"})
	}
	now := metav1.Now()
	for i := range conds {
		conds[i].LastHeartbeatTime, conds[i].LastTransitionTime = now, now
		for _, old := range n.Status.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	n.Status.Conditions = conds
}
