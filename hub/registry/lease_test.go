// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestHeartbeatRenewsTheLease: a heartbeat that changes nothing but the
// times renews the cluster's lease and leaves its record as it is, until
// the record's own copy of the times is half the grace old; the API's
// clusters, the sweep and the next writes read the lease's times, so a
// cluster that beats on time stays Ready although its record's time is
// older than the grace allows.
func TestHeartbeatRenewsTheLease(t *testing.T) {
	r, clk, ctx, st := newRegistryStore(t)
	records := store.NewCollection(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	leases := registry.NewLeaseReader(st)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReportInventory(ctx, "eu1", "", "s", 1, []byte(`{"nodes":[]}`)); err != nil {
		t.Fatal(err)
	}
	beat := func() *v1alpha1.Cluster {
		t.Helper()
		c, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{ClusterReachable: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := beat(); c.Status.State != v1alpha1.ClusterReady {
		t.Fatalf("first beat: state %s, want Ready", c.Status.State)
	}
	first, rev, err := records.Get(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	// Beats every quarter of the grace (10 s): the next one writes the
	// lease only; the one after, 20 s after the record's time, the record.
	clk.Step(10 * time.Second)
	c := beat()
	if _, now, _ := records.Get(ctx, "eu1"); now != rev {
		t.Fatalf("a beat that changed only the times rewrote the record (revision %d → %d)", rev, now)
	}
	l, _, err := leases.Get(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.NewTime(clk.Now())
	if !l.Heartbeat.Equal(&want) || !c.Status.LastHeartbeat.Equal(&want) {
		t.Fatalf("lease %v, returned %v; want both %v", l.Heartbeat, c.Status.LastHeartbeat, want)
	}
	got, _, err := r.GetCluster(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.LastHeartbeat.Equal(&want) || !got.Status.LastHubClusterContact.Equal(&want) {
		t.Fatalf("GetCluster: heartbeat %v, hub-cluster contact %v; want the lease's %v",
			got.Status.LastHeartbeat, got.Status.LastHubClusterContact, want)
	}
	list, err := r.ListClusters(ctx, store.ListOptions{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || !list.Items[0].Status.LastHeartbeat.Equal(&want) {
		t.Fatalf("ListClusters: %d items, heartbeat %v; want the lease's %v", len(list.Items), list.Items[0].Status.LastHeartbeat, want)
	}
	clk.Step(10 * time.Second)
	beat()
	stored, now, err := records.Get(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	want = metav1.NewTime(clk.Now())
	if now == rev || !stored.Status.LastHeartbeat.Equal(&want) {
		t.Fatalf("a beat half the grace after the record's time: record revision %d (was %d), its heartbeat %v; want rewritten at %v",
			now, rev, stored.Status.LastHeartbeat, want)
	}
	// The next beat writes the lease only (the record's time is 10 s
	// old); 39 s later the record's time is 49 s old, past the grace, and
	// the lease's 39 s: the cluster stays Ready.
	clk.Step(10 * time.Second)
	beat()
	clk.Step(39 * time.Second)
	if err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err = r.GetCluster(ctx, "eu1"); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.ClusterReady {
		t.Fatalf("sweep 39 s after the last beat (lease) and 49 s after the record's: state %s, want Ready", got.Status.State)
	}
	// A cordon (a write that evaluates the state) reads the lease too.
	if c, _, err = r.Cordon(ctx, "eu1", true); err != nil {
		t.Fatal(err)
	}
	if c.Status.State != v1alpha1.ClusterCordoned {
		t.Fatalf("cordoned 39 s after the last beat: state %s, want Cordoned", c.Status.State)
	}
	// Silence past the grace, counted from the lease, turns it NotReady.
	clk.Step(3 * time.Second)
	if err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err = r.GetCluster(ctx, "eu1"); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.ClusterNotReady {
		t.Fatalf("42 s after the last beat: state %s, want NotReady", got.Status.State)
	}
	if first.Status.LastHeartbeat == nil {
		t.Fatal("the first beat did not write the record's heartbeat")
	}
}

// TestLeaseGoesWithTheCluster: removing a cluster deletes its lease, and a
// registration under a name whose lease is left over (from a hub before
// leases that removed the cluster) starts without it: the new cluster
// waits for its first heartbeat instead of counting from the old one.
func TestLeaseGoesWithTheCluster(t *testing.T) {
	r, clk, ctx, st := newRegistryStore(t)
	leases := registry.NewLeaseReader(st)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{Usages: 5})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{ClusterReachable: true}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "eu1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := leases.Get(ctx, "eu1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease after the removal: %v, want not found", err)
	}
	// A lease left over: written as the registry writes it.
	left := store.NewCollection(st, registry.KindClusterLeases, store.JSONCodec[*registry.Lease]())
	if _, err := left.Create(ctx, "eu1", &registry.Lease{Heartbeat: metav1.NewTime(clk.Now())}); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Minute)
	if _, err := register(t, r, ctx, token, "eu1", "uid-2"); err != nil {
		t.Fatal(err)
	}
	c, _, err := r.GetCluster(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.LastHeartbeat != nil || c.Status.State != v1alpha1.ClusterPending {
		t.Fatalf("registered again: heartbeat %v, state %s; want none, Pending", c.Status.LastHeartbeat, c.Status.State)
	}
	if err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if c, _, err = r.GetCluster(ctx, "eu1"); err != nil || c.Status.State != v1alpha1.ClusterPending {
		t.Fatalf("swept: state %s (%v), want Pending", c.Status.State, err)
	}
}
