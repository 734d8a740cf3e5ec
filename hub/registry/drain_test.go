// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestDrainState follows a cluster drain and a node drain: Draining while
// a reservation has a member there (the Drained condition names the job),
// Cordoned with reason Drained once none is left, Ready again on uncordon.
func TestDrainState(t *testing.T) {
	r, _, ctx, st := newRegistryStore(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{AgentVersion: "v1", ClusterReachable: true, Message: "", HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReportInventory(ctx, "eu1", "", "s", 1, []byte(`{"nodes":[]}`)); err != nil {
		t.Fatal(err)
	}
	reservations := store.NewCollection(st, ledger.Kind, store.JSONCodec[*ledger.Reservation]())
	if _, err := reservations.Create(ctx, "llama", &ledger.Reservation{Job: "llama", Epoch: 1, Clusters: []string{"eu1"},
		Members: []ledger.Member{{Index: 0, Cluster: "eu1", Node: "n1"}}}); err != nil {
		t.Fatal(err)
	}
	check := func(state v1alpha1.ClusterState, drained metav1.ConditionStatus, msg string) *v1alpha1.Cluster {
		t.Helper()
		if err := r.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		c, _, err := r.GetCluster(ctx, "eu1")
		if err != nil {
			t.Fatal(err)
		}
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionDrained)
		switch {
		case c.Status.State != state:
			t.Fatalf("state %s, want %s", c.Status.State, state)
		case drained == "" && d != nil:
			t.Fatalf("Drained condition %+v, want none", d)
		case drained != "" && (d == nil || d.Status != drained || !strings.Contains(d.Message, msg)):
			t.Fatalf("Drained condition %+v, want %s saying %q", d, drained, msg)
		}
		return c
	}
	if _, _, err := r.Drain(ctx, "eu1"); err != nil {
		t.Fatal(err)
	}
	c := check(v1alpha1.ClusterDraining, metav1.ConditionFalse, "1 gangs still have members on the drained cluster or nodes: llama")
	if !c.Spec.Unschedulable || !c.Spec.Drain {
		t.Fatalf("spec %+v: a drain cordons", c.Spec)
	}
	if err := reservations.Delete(ctx, "llama", 0); err != nil {
		t.Fatal(err)
	}
	c = check(v1alpha1.ClusterCordoned, metav1.ConditionTrue, "no gang")
	if ready := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionReady); ready == nil ||
		ready.Status != metav1.ConditionTrue || ready.Reason != v1alpha1.ReasonDrained {
		t.Fatalf("Ready condition %+v, want True/%s", ready, v1alpha1.ReasonDrained)
	}
	if _, _, err := r.Cordon(ctx, "eu1", false); err != nil {
		t.Fatal(err)
	}
	c = check(v1alpha1.ClusterReady, "", "")
	if c.Spec.Drain || c.Spec.Unschedulable {
		t.Fatalf("spec %+v after uncordon", c.Spec)
	}

	// A node drain keeps the cluster Ready; the node's gang is waited for.
	if _, err := reservations.Create(ctx, "llama", &ledger.Reservation{Job: "llama", Epoch: 2, Clusters: []string{"eu1"},
		Members: []ledger.Member{{Index: 0, Cluster: "eu1", Node: "n1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.DrainNode(ctx, "eu1", "n2", true); err != nil {
		t.Fatal(err)
	}
	check(v1alpha1.ClusterReady, metav1.ConditionTrue, "no gang")
	if _, _, err := r.DrainNode(ctx, "eu1", "n1", true); err != nil {
		t.Fatal(err)
	}
	c = check(v1alpha1.ClusterReady, metav1.ConditionFalse, "llama")
	if strings.Join(c.Spec.DrainedNodes, ",") != "n1,n2" {
		t.Fatalf("drained nodes %v", c.Spec.DrainedNodes)
	}
	for _, n := range []string{"n1", "n2"} {
		if _, _, err := r.DrainNode(ctx, "eu1", n, false); err != nil {
			t.Fatal(err)
		}
	}
	if c := check(v1alpha1.ClusterReady, "", ""); len(c.Spec.DrainedNodes) != 0 {
		t.Fatalf("drained nodes %v after uncordon", c.Spec.DrainedNodes)
	}
}

// TestDrainRefusals: an unknown cluster is NotFound, a node name that is
// not one is invalid.
func TestDrainRefusals(t *testing.T) {
	r, _, ctx := newRegistry(t)
	if _, _, err := r.Drain(ctx, "nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("drain of an unknown cluster: %v", err)
	}
	if _, _, err := r.DrainNode(ctx, "nope", "n1", true); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("node drain on an unknown cluster: %v", err)
	}
	if _, _, err := r.DrainNode(context.Background(), "eu1", "Bad_Node", true); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("node drain of an invalid name: %v", err)
	}
}
