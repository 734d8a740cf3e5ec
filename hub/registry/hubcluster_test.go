// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
)

// TestHubClusterReachability: heartbeats that say the agent cannot reach
// the hub cluster keep the cluster Ready but do not move
// LastHubClusterContact; the HubClusterReachable condition is False with
// HubClusterUnreachable, then HubClusterFenceExpired once the last
// heartbeat that said it reaches the hub cluster is older than the fence
// timeout plus the margin (the sweep finds it too), and True again with
// the next that says so. A heartbeat that does not say (an older agent)
// counts as reachable and removes the condition.
func TestHubClusterReachability(t *testing.T) {
	r, clk, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReportInventory(ctx, "eu1", "", "s", 1, []byte(`{"nodes":[]}`)); err != nil {
		t.Fatal(err)
	}
	beat := func(hub *bool) *v1alpha1.Cluster {
		t.Helper()
		c, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{ClusterReachable: true, HubClusterReachable: hub})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	reason := func(c *v1alpha1.Cluster) string {
		if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable); cond != nil {
			return string(cond.Status) + "/" + cond.Reason
		}
		return ""
	}
	c := beat(ptr.To(true))
	full := c.Status.LastHubClusterContact
	if full == nil || reason(c) != "True/"+v1alpha1.ReasonHubClusterReachable {
		t.Fatalf("after a full beat: contact %v, condition %q", full, reason(c))
	}
	clk.Step(10 * time.Second)
	c = beat(ptr.To(false))
	if !c.Status.LastHubClusterContact.Equal(full) || reason(c) != "False/"+v1alpha1.ReasonHubClusterUnreachable || c.Status.State != v1alpha1.ClusterReady {
		t.Fatalf("half cut: contact %v (want %v), condition %q, state %s; want unchanged, Unreachable, Ready",
			c.Status.LastHubClusterContact, full, reason(c), c.Status.State)
	}
	limit := registry.DefaultFenceTimeout + registry.DefaultFenceMargin
	clk.Step(limit - 10*time.Second) // the end of the full beat's second plus limit is still ahead
	if c = beat(ptr.To(false)); reason(c) != "False/"+v1alpha1.ReasonHubClusterUnreachable {
		t.Fatalf("at fence timeout plus margin: condition %q, want still Unreachable", reason(c))
	}
	clk.Step(1500 * time.Millisecond)
	if err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	c, _, err := r.GetCluster(ctx, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	if reason(c) != "False/"+v1alpha1.ReasonHubClusterFenced || c.Status.State != v1alpha1.ClusterReady {
		t.Fatalf("past fence timeout plus margin: condition %q, state %s; want FenceExpired, Ready", reason(c), c.Status.State)
	}
	if c = beat(ptr.To(false)); reason(c) != "False/"+v1alpha1.ReasonHubClusterFenced {
		t.Fatalf("a further half-cut beat: condition %q, want still FenceExpired", reason(c))
	}
	if c = beat(ptr.To(true)); reason(c) != "True/"+v1alpha1.ReasonHubClusterReachable || !c.Status.LastHubClusterContact.After(full.Time) {
		t.Fatalf("healed: condition %q, contact %v", reason(c), c.Status.LastHubClusterContact)
	}
	clk.Step(time.Minute)
	if c = beat(nil); reason(c) != "" || !c.Status.LastHubClusterContact.Equal(c.Status.LastHeartbeat) {
		t.Fatalf("a beat that does not say: condition %q, contact %v (beat %v); want none, the beat", reason(c), c.Status.LastHubClusterContact, c.Status.LastHeartbeat)
	}
}
