// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

func testInventory() *inventory.Cluster {
	return &inventory.Cluster{Name: "eu1", Generation: 3, Nodes: []inventory.Node{
		{Name: "a1", Product: "H100", CapacityGPUs: 8, GPUs: 8, UsedGPUs: 2, Ready: true, Rack: "r1"},
		{Name: "a2", Product: "H100", CapacityGPUs: 8, GPUs: 8, UsedGPUs: 8, Ready: true, Rack: "r1"},
		{Name: "b1", Product: "A100", CapacityGPUs: 4, GPUs: 4, Ready: true, Unschedulable: true, Rack: "r2"},
	}}
}

func TestGPUsByProduct(t *testing.T) {
	c := &v1alpha1.Cluster{}
	tests := []struct {
		name string
		c    *v1alpha1.Cluster
		inv  *inventory.Cluster
		want string
	}{
		{"no inventory", c, nil, "-"},
		{"summary only", &v1alpha1.Cluster{Status: v1alpha1.ClusterStatus{Inventory: &v1alpha1.InventorySummary{GPUs: 16, FreeGPUs: 6}}}, nil, "6/16"},
		{"by product, cordoned node not free", c, testInventory(), "A100 0/4, H100 6/16"},
		{"no GPU nodes", c, &inventory.Cluster{}, "0"},
	}
	for _, tt := range tests {
		if got := gpusByProduct(tt.c, tt.inv); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTokenState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tok := func(expires time.Duration, maxUses, uses int32, revoked bool) *v1alpha1.JoinToken {
		return &v1alpha1.JoinToken{
			Spec:   v1alpha1.JoinTokenSpec{Expires: metav1.NewTime(now.Add(expires)), MaxUses: maxUses},
			Status: v1alpha1.JoinTokenStatus{Uses: uses, Revoked: revoked},
		}
	}
	tests := []struct {
		t    *v1alpha1.JoinToken
		want string
	}{
		{tok(time.Hour, 1, 0, false), "valid"},
		{tok(time.Hour, 0, 9, false), "valid"},
		{tok(-time.Second, 1, 0, false), "expired"},
		{tok(time.Hour, 2, 2, false), "used-up"},
		{tok(time.Hour, 1, 0, true), "revoked"},
	}
	for i, tt := range tests {
		if got := tokenState(tt.t, now); got != tt.want {
			t.Errorf("case %d: %s, want %s", i, got, tt.want)
		}
	}
}

func TestDescribeCluster(t *testing.T) {
	c := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "eu1"}, Spec: v1alpha1.ClusterSpec{UID: "u1"},
		Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady, AgentVersion: "v1"}}
	var b bytes.Buffer
	if err := describeCluster(&b, c, testInventory(), false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"State:", "Ready", "GPU pools (inventory generation 3, 3 nodes)", "Topology rack domains (2)", "r1"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Hub cluster:") {
		t.Errorf("describe output names the hub cluster link while nothing is wrong with it:\n%s", out)
	}
	b.Reset()
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ClusterConditionHubClusterReachable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonHubClusterUnreachable, Message: "the agent cannot reach the hub cluster"}}
	if err := describeCluster(&b, c, testInventory(), false); err != nil ||
		!strings.Contains(b.String(), "Hub cluster:") || !strings.Contains(b.String(), v1alpha1.ReasonHubClusterUnreachable+": the agent cannot reach the hub cluster") {
		t.Errorf("half cut: %v\n%s", err, b.String())
	}
	c.Status.Conditions = nil
	b.Reset()
	if err := describeCluster(&b, c, nil, false); err != nil || !strings.Contains(b.String(), "none reported yet") {
		t.Errorf("without inventory: %v\n%s", err, b.String())
	}
}

// TestDescribeClusterTopology: describe names the topology preset and keys
// the agent reported, and its warning when the GPU nodes carry none.
func TestDescribeClusterTopology(t *testing.T) {
	c := &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "tg1"}, Status: v1alpha1.ClusterStatus{
		Inventory: &v1alpha1.InventorySummary{Topology: &v1alpha1.TopologySummary{Source: "auto", Preset: "topograph-v1",
			NVLinkKey: "accelerator.topograph.run/domain", RackKey: "fabric.topograph.run/tier-0"}}}}
	var b bytes.Buffer
	if err := describeCluster(&b, c, nil, false); err != nil {
		t.Fatal(err)
	}
	if want := "topograph-v1 (auto) nvlink=accelerator.topograph.run/domain,rack=fabric.topograph.run/tier-0"; !strings.Contains(b.String(), want) ||
		strings.Contains(b.String(), "Topology warning") {
		t.Errorf("describe lacks %q or warns:\n%s", want, b.String())
	}
	c.Status.Inventory.Topology = &v1alpha1.TopologySummary{Source: "auto", Message: "no topology labels found on GPU nodes"}
	b.Reset()
	if err := describeCluster(&b, c, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no preset (auto) -", "Topology warning:", "no topology labels found on GPU nodes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}
