// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// fleet is what one cycle decides on: a snapshot of the scheduler's caches
// (caches.go).
type fleet struct {
	ledger *ledger.State
	// pendingJobs are the pending jobs (phase Pending or none), in the
	// order the engine decides them (placement.ComparePending), as the
	// cache keeps them: without their pod templates
	// (jobcodec.go); a write reads them whole first (wholeJobs).
	pendingJobs []*activeJob
	// booked are the ledger's reservations, each with its job, in no
	// order; bookedAt finds one by name (made by job when first asked).
	booked   []bookedJob
	bookedAt map[string]int
	// finished counts the finished jobs by phase, phases the unfinished
	// ones (no phase counts as Pending), queueCounts each queue's
	// unfinished jobs (jobIndex).
	finished    map[v1alpha1.JobPhase]int
	phases      map[v1alpha1.JobPhase]int
	queueCounts map[string]queueCount
	// held is what the reservations' jobs change in each queue's tally
	// (queueTally.book), terminating the reservations' jobs being
	// preempted (by their preemptors), reservedPending the pending jobs
	// still holding a reservation (rare): the join keeps them as entries
	// change (reservationJoin.count).
	held            map[string]queueTally
	terminating     map[string]string
	reservedPending map[string]bool
	// running is what changed in booked since the join's last take.
	running *runningChanges
	queues  []*v1alpha1.Queue
	// queueRevs are the revisions the queues were read at.
	queueRevs map[string]int64
	clusters  []inventory.Cluster
	// received is when each cluster's inventory report arrived.
	received map[string]time.Time
	// owned says which clusters' nodes are this fleet's copy (ownNodes);
	// the others are the inventory cache's and are not changed.
	owned []bool
	// byName maps a cluster's node names to its nodes, for the clusters
	// asked about (node).
	byName map[string]map[string]*inventory.Node
	// registered are all clusters and unready the inventories of those not
	// Ready, which only the metrics read (fleetmetrics.go).
	registered []store.Item[*v1alpha1.Cluster]
	unready    []store.Item[*registry.InventoryRecord]
	// leases are the clusters' heartbeat leases, for the metrics too.
	leases map[string]*registry.Lease
	// gangs maps a Ready cluster to its inventory's gang members
	// (holdsMembers; nil map: an agent that does not count them).
	gangs map[string]map[string]int32
	// pools are the GPU pools; poolFilters their node filters by name
	// (resolvePools).
	pools       []*v1alpha1.GPUPool
	poolFilters map[string]placement.PoolFilter
	// queuePools are gangPools' answers by queue, shared by the gangs of
	// a queue.
	queuePools map[string][]placement.PoolFilter
	// revisions are the store revisions each kind's cache was current to
	// when the snapshot was taken; the ledger's is ledger.Revision.
	revisions map[string]int64
	// tally counts the jobs (input counts them).
	tally *jobTally
	// waited is how long reading it waited for the caches to reach the
	// revisions it needs, and for the store's newest revisions.
	waited time.Duration
	// waits name what it waited for, for a slow cycle's log: "wait.<kind>"
	// (a cache reaching a revision) or "newest" (the store's newest
	// revisions of the small kinds), each with its milliseconds, when 1 or
	// more.
	waits []any
}

// read takes the fleet a cycle decides on. While the scheduler leads, from
// its watch-fed caches (caches.snapshot says how the ledger is taken first
// in meaning: a booking the decision misses fails its guard); otherwise
// from a fresh list of every kind, the ledger first.
func (s *Scheduler) read(ctx context.Context) (*fleet, error) {
	c := s.caches
	if c == nil {
		c = s.newCaches()
		if err := c.syncAll(ctx); err != nil {
			return nil, err
		}
	}
	s.wroteMu.Lock()
	wrote := s.wrote // the explainer writes beside the cycle
	s.wroteMu.Unlock()
	return c.snapshot(ctx, wrote, s.booked)
}

// ownNodes is cluster ci's nodes to change (drained nodes, cordoned
// pools): a copy of the cache's, made at the first change. A scheduling
// cycle's snapshot builder keeps the inventories it built from to compare
// the next ones with, so they are never changed in place.
func (f *fleet) ownNodes(ci int) []inventory.Node {
	if !f.owned[ci] {
		f.clusters[ci].Nodes = slices.Clone(f.clusters[ci].Nodes)
		f.owned[ci] = true
	}
	return f.clusters[ci].Nodes
}

// node is a Ready cluster's node by name (nil: not known).
func (f *fleet) node(cluster, name string) *inventory.Node {
	m, ok := f.byName[cluster]
	if !ok {
		if f.byName == nil {
			f.byName = map[string]map[string]*inventory.Node{}
		}
		for ci := range f.clusters {
			if c := &f.clusters[ci]; c.Name == cluster {
				m = make(map[string]*inventory.Node, len(c.Nodes))
				for ni := range c.Nodes {
					m[c.Nodes[ni].Name] = &c.Nodes[ni]
				}
			}
		}
		f.byName[cluster] = m
	}
	return m[name]
}

// clusterReady says whether the scheduler places on a cluster: Ready and
// its agent not known to be cut off from the hub cluster.
func clusterReady(c *v1alpha1.Cluster) bool {
	return c.Status.State == v1alpha1.ClusterReady &&
		!meta.IsStatusConditionFalse(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable)
}

// allocations turns the ledger into the snapshot's running gangs. A gang
// counts as already included in the inventory once every member ran and
// the inventory of every cluster it uses holds all its members there
// (inventory.Cluster.Gangs: the bound member pods of each gang, whose GPUs
// the nodes' UsedGPUs include); before, its GPUs are subtracted from the
// inventory. Members are gated until the commit, so hold no GPUs in the
// inventory until then; a report after the commit may still miss members
// bound after it was built, and counting the gang from it made the GPUs
// of those members look free: the scheduler booked another gang onto
// them (58 nodes of a 10-cluster load run held more GPUs of bookings than
// they have, docs/scale.md "Session 29"), which the agents' fit check
// refused at prepare. An agent before Gangs sends none; its cluster
// counts the gang from its first report after the commit, as before.
// Once counted, a reservation stays counted until it changes (its form
// is made again).
// A gang booked but not started yet has no start time: the engine counts
// it as starting at the cycle's time (placement.Allocation.Started), so
// its allocation does not change from cycle to cycle. The job's latest
// checkpoint (status.checkpoint) and its interval tell the preemption
// search how much work a victim loses.
// The gangs are appended to out.
func (f *fleet) allocations(out []*placement.Allocation) []*placement.Allocation {
	out = slices.Grow(out, len(f.booked))
	for i := range f.booked {
		out = append(out, f.allocation(&f.booked[i]))
	}
	return out
}

// allocation is a reservation's running gang: the form its join entry
// holds, made once per revision of the reservation, with its times and
// Counted set again (placement.Builder reads them in place).
func (f *fleet) allocation(b *bookedJob) *placement.Allocation {
	r, j, a := b.res.Object, b.job, b.form
	counted := a.Counted && !r.Started.IsZero()
	if !counted && j != nil && !j.committed.IsZero() && !r.Started.IsZero() {
		counted = true
		for _, c := range r.Clusters {
			counted = counted && f.holdsMembers(c, r, j.committed)
		}
	}
	a.Started, a.Counted = r.Started, counted
	a.LastCheckpoint, a.CheckpointInterval = time.Time{}, 0
	if j != nil {
		// A checkpoint of an earlier epoch still saved the work up to it.
		a.LastCheckpoint, a.CheckpointInterval = j.checkpointAt, j.checkpointEvery
	}
	return a
}

// holdsMembers says whether cluster c's inventory holds every member of
// reservation r on c's nodes (Cluster.Gangs; a bound member of a CPU-only
// role counts there too, and is not asked for), or, from an agent that
// does not count gangs, whether c reported after the commit.
func (f *fleet) holdsMembers(c string, r *ledger.Reservation, committed time.Time) bool {
	if f.gangs == nil {
		f.gangs = make(map[string]map[string]int32, len(f.clusters))
		for i := range f.clusters {
			f.gangs[f.clusters[i].Name] = f.clusters[i].Gangs
		}
	}
	gangs, ok := f.gangs[c]
	if !ok || gangs == nil {
		return f.received[c].After(committed)
	}
	want := 0 // the members placed on c's nodes (the scheduler's reservations carry no Members)
	for i := range r.Assignments {
		if r.Assignments[i].Cluster == c {
			want += r.Assignments[i].Members
		}
	}
	return int(gangs[inventory.GangKey(r.Job, r.Epoch)]) >= want
}

// job is the job of a reservation of the snapshot, by name.
func (f *fleet) job(name string) (store.Item[*v1alpha1.Job], bool) {
	if f.bookedAt == nil {
		f.bookedAt = make(map[string]int, len(f.booked))
		for i := range f.booked {
			f.bookedAt[f.booked[i].res.Name] = i
		}
	}
	i, ok := f.bookedAt[name]
	if !ok || f.booked[i].job == nil {
		return store.Item[*v1alpha1.Job]{}, false
	}
	return f.booked[i].job.Item, true
}

// registryInventories is the read-only view of the registry's inventories.
func registryInventories(st *store.Store) store.Reader[*registry.InventoryRecord] {
	return store.NewReader(st, registry.KindInventories, registry.InventoryCodec())
}

// registryClusters is the read-only view of the registry's clusters.
func registryClusters(st *store.Store) store.Reader[*v1alpha1.Cluster] {
	return store.NewReader(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
}
