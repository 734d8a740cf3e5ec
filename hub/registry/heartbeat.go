// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/store"
)

// Beat is what one heartbeat says (HeartbeatRequest).
type Beat struct {
	// AgentVersion is the agent's version ("": unchanged).
	AgentVersion string
	// ClusterReachable says whether the agent reaches its own cluster's API
	// server; Message says why not.
	ClusterReachable bool
	Message          string
	// HubClusterReachable says whether the agent reaches the hub cluster
	// (it sees its members' hub pods and their deletion); nil: the agent
	// does not say (one older than the field), and the heartbeat counts as
	// one with the hub cluster reachable, as before.
	HubClusterReachable *bool
}

// Heartbeat records that cluster's agent is alive, and when it said it
// reaches the hub cluster (LastHubClusterContact): it renews the
// cluster's Lease, and writes the Cluster record too only when the beat
// changes something else in it or the record's copy of the times is
// getting old (lease.go). serial is the agent certificate's; "" skips the
// check that it is the cluster's current one. It returns the cluster with
// the lease applied.
func (r *Registry) Heartbeat(ctx context.Context, cluster, serial string, b Beat) (*v1alpha1.Cluster, error) {
	for {
		lc, err := r.getLeased(ctx, cluster)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: cluster %q is not registered", ErrCertificateRevoked, cluster)
		}
		if err != nil {
			return nil, err
		}
		c := lc.c
		if err := currentSerial(c, serial); err != nil {
			return nil, err
		}
		before := c.DeepCopy()
		now := r.clock.Now()
		lease := &Lease{Heartbeat: metav1.NewTime(now), HubClusterContact: c.Status.LastHubClusterContact}
		if b.HubClusterReachable == nil || *b.HubClusterReachable {
			lease.HubClusterContact = &lease.Heartbeat
		}
		c.Status.LastHeartbeat, c.Status.LastHubClusterContact = nil, nil
		lease.Apply(c)
		if b.AgentVersion != "" {
			c.Status.AgentVersion = b.AgentVersion
		}
		cond := metav1.Condition{Type: v1alpha1.ClusterConditionReachable, Status: metav1.ConditionTrue, Reason: "APIServerReachable", Message: b.Message}
		if !b.ClusterReachable {
			cond.Status, cond.Reason = metav1.ConditionFalse, "APIServerUnreachable"
		}
		meta.SetStatusCondition(&c.Status.Conditions, cond)
		r.hubClusterBeat(c, b.HubClusterReachable)
		r.evaluate(c)
		ops := []store.Op{r.leases.PutOp(cluster, lease)}
		if r.recordChanged(before, c, lc.stored, now) {
			ops = append(ops, r.clusters.PutOp(cluster, c))
		}
		_, err = r.store.Txn(ctx).If(r.guards(cluster, lc)...).Then(ops...).Commit()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// ReportInventory keeps the report as cluster's latest unless it is older
// than the held one (same session, generation not newer). It returns the
// generation held afterwards. serial is checked like Heartbeat's.
func (r *Registry) ReportInventory(ctx context.Context, cluster, serial, session string, generation int64, inventoryJSON []byte) (int64, error) {
	var inv inventory.Cluster
	if err := store.DecodeJSON(inventoryJSON, &inv); err != nil {
		return 0, fmt.Errorf("%w: inventory JSON: %w", ErrInvalid, err)
	}
	if inv.Name != "" && inv.Name != cluster {
		return 0, fmt.Errorf("%w: inventory names cluster %q, the certificate %q", ErrInvalid, inv.Name, cluster)
	}
	if err := inv.Validate(); err != nil {
		return 0, fmt.Errorf("%w: inventory: %w", ErrInvalid, err)
	}
	for {
		held, invRev, err := r.inventories.Get(ctx, cluster)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		if held != nil && held.SessionID == session && generation <= held.Generation {
			return held.Generation, nil
		}
		lc, err := r.getLeased(ctx, cluster)
		if errors.Is(err, store.ErrNotFound) {
			return 0, fmt.Errorf("%w: cluster %q is not registered", ErrCertificateRevoked, cluster)
		}
		if err != nil {
			return 0, err
		}
		cl := lc.c
		if err := currentSerial(cl, serial); err != nil {
			return 0, err
		}
		rec := &InventoryRecord{Cluster: cluster, SessionID: session, Generation: generation,
			Received: r.clock.Now().UTC(), Inventory: inventoryJSON}
		cl.Status.Inventory = Summarize(inv, generation)
		r.evaluate(cl)
		_, err = r.store.Txn(ctx).
			If(append(r.guards(cluster, lc), r.inventories.RevIs(cluster, invRev))...).
			Then(r.inventories.PutOp(cluster, rec), r.clusters.PutOp(cluster, cl)).
			Commit()
		if err == nil {
			return generation, nil
		}
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return 0, err
		}
	}
}

// currentSerial refuses a certificate serial that is not the cluster's
// current one: the check is repeated inside the write, so a certificate
// revoked between authorization and write cannot update the new record.
func currentSerial(c *v1alpha1.Cluster, serial string) error {
	if serial != "" && c.Annotations[v1alpha1.AnnotationCertificateSerial] != serial {
		return fmt.Errorf("%w: certificate %s is no longer cluster %q's", ErrCertificateRevoked, serial, c.Name)
	}
	return nil
}

// GetInventory returns cluster's latest inventory report.
func (r *Registry) GetInventory(ctx context.Context, cluster string) (*InventoryRecord, int64, error) {
	rec, rev, err := r.inventories.Get(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: no inventory from cluster %q yet", ErrNotFound, cluster)
	}
	return rec, rev, err
}

// Inventories returns the latest inventory of every cluster that reported one.
func (r *Registry) Inventories(ctx context.Context) ([]inventory.Cluster, error) {
	res, err := r.inventories.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]inventory.Cluster, 0, len(res.Items))
	for _, it := range res.Items {
		var inv inventory.Cluster
		if err := store.DecodeJSON(it.Object.Inventory, &inv); err != nil {
			return nil, fmt.Errorf("inventory of cluster %q: %w", it.Name, err)
		}
		inv.Name = it.Name
		out = append(out, inv)
	}
	return out, nil
}

// Summarize reduces an inventory to the Cluster status summary.
func Summarize(inv inventory.Cluster, generation int64) *v1alpha1.InventorySummary {
	s := &v1alpha1.InventorySummary{Generation: generation, Nodes: int32(len(inv.Nodes)), Products: map[string]int32{}}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		total := max(n.CapacityGPUs, n.GPUs)
		s.GPUs += int32(total)
		s.FreeGPUs += int32(n.FreeGPUs())
		if n.Ready {
			s.UnhealthyGPUs += int32(total - n.GPUs)
		} else {
			s.UnhealthyGPUs += int32(total)
		}
		if total > 0 {
			product := n.Product
			if product == "" {
				product = "unknown"
			}
			s.Products[product] += int32(total)
		}
	}
	if len(s.Products) == 0 {
		s.Products = nil
	}
	if t := inv.Topology; t != nil {
		s.Topology = &v1alpha1.TopologySummary{Source: t.Source, Preset: t.Preset,
			NVLinkKey: t.Keys.NVLink, RackKey: t.Keys.Rack, BlockKey: t.Keys.Block, ZoneKey: t.Keys.Zone, Message: t.Message}
	}
	return s
}
