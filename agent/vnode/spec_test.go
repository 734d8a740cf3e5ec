// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

func TestNodeSpec(t *testing.T) {
	m := New(Config{Cluster: "eu1", Address: "10.0.0.7", Version: "v1",
		Labels: map[string]string{"region": "eu", "bad key!": "x", "tier": "not a valid value"}})
	tests := []struct {
		name     string
		pool     fedinv.Pool
		resource corev1.ResourceName
		product  string
	}{
		{"whole GPUs", fedinv.Pool{Name: "h100-80gb", Product: "NVIDIA-H100-80GB-HBM3", Resource: fedinv.ResourceGPU,
			Capacity: 16, Allocatable: 8, Free: 6, MemoryMiB: 81559}, fedinv.ResourceGPU, "NVIDIA-H100-80GB-HBM3"},
		{"MIG", fedinv.Pool{Name: "a100-80gb-mig-1g-10gb", Product: "NVIDIA-A100-SXM4-80GB", Resource: "nvidia.com/mig-1g.10gb",
			Capacity: 7, Allocatable: 7, Free: 7}, "nvidia.com/mig-1g.10gb", "NVIDIA-A100-SXM4-80GB"},
		{"unlabelled product", fedinv.Pool{Name: "gpu", Resource: fedinv.ResourceGPU, Capacity: 1, Allocatable: 1, Free: 1}, fedinv.ResourceGPU, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := m.nodeSpec(tt.pool, 10250)
			if n.Name != "shoal-eu1-"+tt.pool.Name || n.Name != v1alpha1.VirtualNodeName("eu1", tt.pool.Name) {
				t.Errorf("name = %s", n.Name)
			}
			c, a := n.Status.Capacity[tt.resource], n.Status.Allocatable[tt.resource]
			// No member holds anything at registration: allocatable is what is free.
			if int(c.Value()) != tt.pool.Capacity || int(a.Value()) != tt.pool.Free {
				t.Errorf("capacity/allocatable = %v/%v", c.Value(), a.Value())
			}
			if n.Labels[v1alpha1.LabelCluster] != "eu1" || n.Labels[v1alpha1.LabelVirtual] != "true" || n.Labels["type"] != "virtual-kubelet" ||
				n.Labels["region"] != "eu" || n.Labels[fedinv.LabelGPUProduct] != tt.product {
				t.Errorf("labels = %v", n.Labels)
			}
			if _, ok := n.Labels["bad key!"]; ok {
				t.Error("invalid label key copied")
			}
			if _, ok := n.Labels["tier"]; ok {
				t.Error("invalid label value copied")
			}
			if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != v1alpha1.TaintVirtual {
				t.Errorf("taints = %v", n.Spec.Taints)
			}
			if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || n.Status.Addresses[0].Address != "10.0.0.7" {
				t.Errorf("endpoint = %v %v", n.Status.DaemonEndpoints, n.Status.Addresses)
			}
		})
	}
}

func TestReadyFollowsHealth(t *testing.T) {
	m := New(Config{Cluster: "eu1"})
	p := fedinv.Pool{Name: "h100", Resource: fedinv.ResourceGPU, Capacity: 8, Allocatable: 8}
	np := newNodeProvider(m, m.nodeSpec(p, 10250), p)
	np.set(p, false, "connection refused")
	if readyOf(np.node) != corev1.ConditionFalse || np.node.Status.Conditions[0].Reason != v1alpha1.ReasonWorkloadClusterUnreachable {
		t.Errorf("ready = %v %v", readyOf(np.node), np.node.Status.Conditions[0])
	}
	select {
	case <-np.changed:
	default:
		t.Error("no change pushed")
	}
	np.set(p, false, "connection refused")
	select {
	case <-np.changed:
		t.Error("an unchanged status was pushed")
	default:
	}
	np.set(p, true, "")
	if readyOf(np.node) != corev1.ConditionTrue {
		t.Error("not Ready again")
	}
}
