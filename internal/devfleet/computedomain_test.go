// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// TestComputeDomainSimulator: the simulator's controller makes a domain's
// channel template at once, leaves the domain NotReady while its channel
// claims are allocated on fewer than numNodes nodes, and turns it Ready
// with one status node per node once they cover numNodes.
func TestComputeDomainSimulator(t *testing.T) {
	ctx := t.Context()
	node := func(n string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{fedinv.LabelGPUClique: "u.1"}}}
	}
	cs := fake.NewClientset(node("n0"), node("n1"))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cdResource: fedinv.ComputeDomainKind + "List"})
	cd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fedinv.ComputeDomainGroup + "/" + fedinv.ComputeDomainVersion, "kind": fedinv.ComputeDomainKind,
		"metadata": map[string]any{"name": "d", "namespace": "ns", "uid": "uid-d"},
		"spec": map[string]any{"numNodes": int64(2),
			"channel": map[string]any{"resourceClaimTemplate": map[string]any{"name": "d-channel"}}},
	}}
	if _, err := dyn.Resource(cdResource).Namespace("ns").Create(ctx, cd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile := func() (status string, nodes []any) {
		t.Helper()
		got, err := dyn.Resource(cdResource).Namespace("ns").Get(ctx, "d", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := reconcileDomain(ctx, cs, dyn, got); err != nil {
			t.Fatal(err)
		}
		got, _ = dyn.Resource(cdResource).Namespace("ns").Get(ctx, "d", metav1.GetOptions{})
		status, _, _ = unstructured.NestedString(got.Object, "status", "status")
		nodes, _, _ = unstructured.NestedSlice(got.Object, "status", "nodes")
		return status, nodes
	}
	if s, _ := reconcile(); s != "NotReady" {
		t.Fatalf("status %q without claims, want NotReady", s)
	}
	tmpl, err := cs.ResourceV1().ResourceClaimTemplates("ns").Get(ctx, "d-channel", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("channel template: %v", err)
	}
	claim := func(name, node string) {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: tmpl.Spec.Spec,
			Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
				Results: []resourcev1.DeviceRequestAllocationResult{{Request: "channel", Driver: fedinv.ComputeDomainDriver,
					Pool: node, Device: "channel-0"}}}}}}
		if _, err := cs.ResourceV1().ResourceClaims("ns").Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim("a", "n0")
	if s, n := reconcile(); s != "NotReady" || len(n) != 1 {
		t.Fatalf("one node's channel: status %q nodes %v, want NotReady with 1 node", s, n)
	}
	claim("b", "n1")
	if s, n := reconcile(); s != fedinv.ComputeDomainStatusReady || len(n) != 2 {
		t.Fatalf("two nodes' channels: status %q nodes %v, want Ready with 2 nodes", s, n)
	}
}
