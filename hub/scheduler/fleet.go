// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// fleet is what one cycle decides on.
type fleet struct {
	ledger *ledger.State
	jobs   []store.Item[*v1alpha1.Job]
	queues []*v1alpha1.Queue
	// queueRevs are the revisions the queues were read at.
	queueRevs map[string]int64
	clusters  []inventory.Cluster
	// received is when each cluster's inventory report arrived.
	received map[string]time.Time
	// nodes maps "<cluster>/<node>" to the inventory node.
	nodes map[string]*inventory.Node
}

// read loads the fleet. The ledger is read first: a booking made after it
// fails its guard, so the decision never misses one.
func (s *Scheduler) read(ctx context.Context) (*fleet, error) {
	f := &fleet{received: map[string]time.Time{}, nodes: map[string]*inventory.Node{}, queueRevs: map[string]int64{}}
	var err error
	if f.ledger, err = s.ledger.Read(ctx); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	if f.jobs, err = listAll(ctx, s.jobs); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	qs, err := listAll(ctx, s.queues)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	for _, q := range qs {
		f.queues = append(f.queues, q.Object)
		f.queueRevs[q.Name] = q.Revision
	}
	if err := s.readClusters(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// readClusters keeps the inventories of Ready clusters (a cordoned or
// draining cluster is not Ready), with their drained nodes
// (spec.drainedNodes) unschedulable.
func (s *Scheduler) readClusters(ctx context.Context, f *fleet) error {
	cls, err := listAll(ctx, s.clusters)
	if err != nil {
		return fmt.Errorf("list clusters: %w", err)
	}
	ready := map[string]bool{}
	drained := map[string][]string{}
	for _, c := range cls {
		ready[c.Name] = c.Object.Status.State == v1alpha1.ClusterReady
		drained[c.Name] = c.Object.Spec.DrainedNodes
	}
	invs, err := listAll(ctx, s.inventories)
	if err != nil {
		return fmt.Errorf("list inventories: %w", err)
	}
	for _, it := range invs {
		if !ready[it.Name] {
			continue
		}
		var inv inventory.Cluster
		if err := json.Unmarshal(it.Object.Inventory, &inv); err != nil {
			return fmt.Errorf("inventory of cluster %q: %w", it.Name, err)
		}
		inv.Name = it.Name
		f.clusters = append(f.clusters, inv)
		f.received[it.Name] = it.Object.Received
	}
	for ci := range f.clusters {
		c := &f.clusters[ci]
		for ni := range c.Nodes {
			n := &c.Nodes[ni]
			if slices.Contains(drained[c.Name], n.Name) {
				n.Unschedulable = true
			}
			f.nodes[c.Name+"/"+n.Name] = n
		}
	}
	return nil
}

// allocations turns the ledger into the snapshot's running gangs. A gang
// counts as already included in the inventory once every member ran and
// every cluster it uses reported after the commit (members are gated, so
// hold no GPUs in the inventory, until then); before, its GPUs are
// subtracted from the inventory. A report that still misses some bound
// members can make a decision too optimistic for a moment; the agents'
// fit check at prepare catches that and the dispatch is aborted and retried.
// A gang booked but not started yet counts as starting now, so its time
// limit (Estimate) ends no earlier than now plus that limit and it has lost
// no work if it is preempted.
func (f *fleet) allocations(now time.Time) []placement.Allocation {
	committed := map[string]time.Time{}
	for _, it := range f.jobs {
		if d := jobs.DispatchOf(it.Object); d != nil && d.Phase == v1alpha1.DispatchCommitted && d.Time != nil {
			committed[it.Name] = d.Time.Time
		}
	}
	out := make([]placement.Allocation, 0, len(f.ledger.Reservations))
	for _, it := range f.ledger.Reservations {
		r := it.Object
		at, ok := committed[r.Job]
		counted := ok && !r.Started.IsZero()
		for _, c := range r.Clusters {
			counted = counted && f.received[c].After(at)
		}
		started := r.Started
		if started.IsZero() {
			started = now
		}
		out = append(out, placement.Allocation{Gang: r.PlacementGang(), Assignments: r.PlacementAssignments(),
			Started: started, Counted: counted})
	}
	return out
}

func listAll[T any](ctx context.Context, c store.Reader[T]) ([]store.Item[T], error) {
	var out []store.Item[T]
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := c.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// registryInventories is the read-only view of the registry's inventories.
func registryInventories(st *store.Store) store.Reader[*registry.InventoryRecord] {
	return store.NewReader(st, registry.KindInventories, registry.InventoryCodec())
}

// registryClusters is the read-only view of the registry's clusters.
func registryClusters(st *store.Store) store.Reader[*v1alpha1.Cluster] {
	return store.NewReader(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
}
