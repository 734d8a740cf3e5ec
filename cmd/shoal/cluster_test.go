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
	b.Reset()
	if err := describeCluster(&b, c, nil, false); err != nil || !strings.Contains(b.String(), "none reported yet") {
		t.Errorf("without inventory: %v\n%s", err, b.String())
	}
}
