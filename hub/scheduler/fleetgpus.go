// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/store"
)

// The GPU states of shoal_fleet_gpus (docs/metrics.md defines each). Every
// GPU of the capacity a node reports is in exactly one of them.
const (
	gpuFree      = "free"
	gpuAllocated = "allocated"
	gpuReserved  = "reserved"
	gpuUnhealthy = "unhealthy"
	gpuCordoned  = "cordoned"
)

// gpuKey is one series of shoal_fleet_gpus.
type gpuKey struct{ cluster, pool, product, state string }

// gpuStates are the states in the order of a gpuCounts array.
var gpuStates = [...]string{idxFree: gpuFree, idxAllocated: gpuAllocated, idxReserved: gpuReserved,
	idxUnhealthy: gpuUnhealthy, idxCordoned: gpuCordoned}

// The index of each state in gpuStates and gpuCounts.
const (
	idxFree = iota
	idxAllocated
	idxReserved
	idxUnhealthy
	idxCordoned
)

// gpuCounts are one (cluster, product)'s GPUs per state, gpuStates order.
type gpuCounts [len(gpuStates)]int

// gpuViewEvery is how long a cycle reuses the last count of the fleet's
// GPUs (gpuView).
const gpuViewEvery = time.Second

// gpuView is the last count of the fleet's GPUs (fleetGPUs), which reads
// every node of the fleet: at F-XL (100,000 nodes) and three cycles a
// second, about a seventh of the cycles' CPU time, for gauges scraped
// every few seconds at most. A cycle counts again once gpuViewEvery has
// passed since the last count (the leader's cycles come at least every
// Config.Interval, so the gauges lag the fleet by at most about that);
// the zero gpuView counts on the first cycle.
type gpuView struct {
	gpus map[gpuKey]int
	at   time.Time
}

// of is the fleet's GPUs by series, counted again when the last count is
// gpuViewEvery old.
func (g *gpuView) of(f *fleet, snap *placement.Snapshot, states map[string]v1alpha1.ClusterState, now time.Time) map[gpuKey]int {
	if g == nil {
		return fleetGPUs(f, snap, states)
	}
	if g.gpus == nil || now.Sub(g.at) >= gpuViewEvery || now.Before(g.at) {
		g.gpus, g.at = fleetGPUs(f, snap, states), now
	}
	return g.gpus
}

// fleetGPUs splits every whole GPU of the fleet into its state, per
// cluster, pool and product. Ready clusters are read from the snapshot the
// cycle decided on (the ledger's bookings not yet in an inventory are
// reserved); the inventories of the other clusters from their last report.
func fleetGPUs(f *fleet, snap *placement.Snapshot, states map[string]v1alpha1.ClusterState) map[gpuKey]int {
	counts := map[[2]string]*gpuCounts{}
	var lastKey [2]string
	var last *gpuCounts
	at := func(cluster, product string) *gpuCounts {
		k := [2]string{cluster, product}
		if last != nil && k == lastKey { // a cluster's nodes mostly share a product
			return last
		}
		c := counts[k]
		if c == nil {
			c = &gpuCounts{}
			counts[k] = c
		}
		lastKey, last = k, c
		return c
	}
	for ci := range f.clusters {
		c := &f.clusters[ci]
		for ni := range c.Nodes {
			n := &c.Nodes[ni]
			gpus, used, ok := snap.InventoryNodeUsage(ci, ni, c.Name)
			if !ok {
				gpus, used, ok = snap.NodeUsage(c.Name, n.Name)
			}
			if !ok {
				gpus, used = n.GPUs, n.UsedGPUs
			}
			if hasGPUs(n) {
				addNode(at(c.Name, n.Product), n, gpus, used, n.Schedulable(), true)
			}
		}
	}
	for _, it := range f.unready {
		var inv inventory.Cluster
		if store.DecodeJSON(it.Object.Inventory, &inv) != nil {
			continue // the scheduler ignores it too; it only reads Ready clusters
		}
		// A cordoned or draining cluster still runs its gangs; any other
		// state (Pending, NotReady, Lost) cannot be used at all.
		usable := states[it.Name] == v1alpha1.ClusterCordoned || states[it.Name] == v1alpha1.ClusterDraining
		for ni := range inv.Nodes {
			n := &inv.Nodes[ni]
			if hasGPUs(n) {
				addNode(at(it.Name, n.Product), n, n.GPUs, n.UsedGPUs, false, usable)
			}
		}
	}
	pools := map[string]string{}
	out := make(map[gpuKey]int, len(counts)*len(gpuStates))
	for k, c := range counts {
		pool, ok := pools[k[1]]
		if !ok {
			pool = inventory.PoolName(k[1], inventory.ResourceGPU)
			pools[k[1]] = pool
		}
		for i, st := range gpuStates {
			out[gpuKey{cluster: k[0], pool: pool, product: k[1], state: st}] = c[i]
		}
	}
	return out
}

// hasGPUs is false for a MIG-only or CPU node: it has no whole GPUs.
func hasGPUs(n *inventory.Node) bool { return n.GPUs > 0 || n.CapacityGPUs > 0 }

// addNode adds one node's GPUs: its capacity beyond allocatable, or all of
// it on a node not Ready or a cluster not usable, is unhealthy; of the
// rest, the inventory's usage is allocated, bookings not yet in it are
// reserved, and what is left is free on a schedulable node, cordoned
// otherwise.
func addNode(c *gpuCounts, n *inventory.Node, gpus, used int, schedulable, usable bool) {
	unhealthy := max(0, n.CapacityGPUs-n.GPUs)
	if !n.Ready || !usable {
		unhealthy += gpus
		gpus, used = 0, 0
	}
	used = min(used, gpus)
	allocated := min(n.UsedGPUs, used)
	rest := gpus - used
	c[idxUnhealthy] += unhealthy
	c[idxAllocated] += allocated
	c[idxReserved] += used - allocated
	if schedulable {
		c[idxFree] += rest
	} else {
		c[idxCordoned] += rest
	}
}
