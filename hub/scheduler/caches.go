// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// caches are the scheduler's in-memory view of the store while it leads:
// one watch-fed cache per kind a cycle reads (cache.go). A cycle decides on
// a snapshot of them (snapshot) instead of listing and decoding every job
// and inventory.
type caches struct {
	counters     *watched[*ledger.ClusterVersion]
	reservations *watched[*ledger.Reservation]
	jobs         *watched[*cachedJob]
	queues       *watched[*v1alpha1.Queue]
	clusters     *watched[*v1alpha1.Cluster]
	// leases are the clusters' heartbeat leases: read for the heartbeat
	// gauge only, so a snapshot does not wait for them and their changes
	// (every heartbeat) do not poke.
	leases      *watched[*registry.Lease]
	inventories *watched[*registry.InventoryRecord]
	pools       *watched[*v1alpha1.GPUPool]

	// The jobs' index (under jobs.mu).
	index *jobIndex
	// The inventories decoded (under inventories.mu), once per report.
	parsed map[string]parsedInventory
	// following says the caches follow watches (start); the fresh read of a
	// scheduler that does not lead (syncAll) lists once and follows none.
	following bool
}

// parsedInventory is a decoded inventory report or why it did not decode.
type parsedInventory struct {
	inv inventory.Cluster
	err error
}

// cacheWait bounds how long a snapshot waits for a cache to catch up with
// a revision it must reach (its own writes, the counters' bookings).
const cacheWait = 5 * time.Second

func (s *Scheduler) newCaches() *caches {
	c := &caches{
		counters:     newWatched(s.ledger.ClusterVersions()),
		reservations: newWatched(s.ledger.ReservationsWithoutMembers()),
		jobs:         newWatched(jobReader(s.st)),
		queues:       newWatched(s.queues),
		clusters:     newWatched(s.clusters),
		leases:       newWatched(s.leases),
		inventories:  newWatched(s.inventories),
		pools:        newWatched(s.pools),
		index:        newJobIndex(),
		parsed:       map[string]parsedInventory{},
	}
	c.jobs.reset = c.index.reset
	c.jobs.index = c.index.change
	c.jobs.matters = jobChangeMatters
	c.reservations.index = c.index.reservationChange
	c.reservations.reset = c.index.reservationsReset
	c.inventories.reset = func() { clear(c.parsed) }
	c.inventories.index = c.parseInventory
	return c
}

// jobChangeMatters says whether a job's change can change a cycle's
// decision at once: a job created or deleted, a phase or epoch changed, or
// a job's spec, labels, annotations (priority, the requeue backoff) or
// submission time changed. What the dispatcher writes as a placed or
// running gang starts — its dispatch decisions, member phases, their
// conditions — takes or frees no GPU (the reservation does, and its
// change pokes the cycle) and does not wake the scheduler: at thousands of
// gangs starting those writes kept it cycling back to back. Nor does the
// scheduler's own explanation of a waiting job (its Placed condition): a
// cycle that explained thousands of jobs woke the next one for nothing. A
// running job's checkpoint or start time (what preemption and backfill
// read) is seen by the next cycle on the interval.
func jobChangeMatters(old, cur *store.Item[*cachedJob]) bool {
	if old == nil || cur == nil {
		return true
	}
	o, n := old.Object.job, cur.Object.job
	if o.Status.Phase != n.Status.Phase || o.Status.Epoch != n.Status.Epoch ||
		!equality.Semantic.DeepEqual(o.Status.SubmitTime, n.Status.SubmitTime) {
		return true
	}
	return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
}

// parseInventory decodes an inventory report once, when it arrives.
func (c *caches) parseInventory(name string, _, cur *store.Item[*registry.InventoryRecord]) {
	if cur == nil {
		delete(c.parsed, name)
		return
	}
	var p parsedInventory
	if err := store.DecodeJSON(cur.Object.Inventory, &p.inv); err != nil {
		p.err = fmt.Errorf("inventory of cluster %q: %w", name, err)
	}
	p.inv.Name = name
	c.parsed[name] = p
}

// syncAll lists every kind once, the ledger first (the counters, then the
// reservations at a later revision, then the rest): the fresh read of a
// scheduler that does not lead, whose caches follow no watch.
func (c *caches) syncAll(ctx context.Context) error {
	if err := c.counters.sync(ctx); err != nil {
		return err
	}
	if err := c.reservations.sync(ctx); err != nil {
		return err
	}
	if err := c.jobs.sync(ctx); err != nil {
		return err
	}
	if err := c.queues.sync(ctx); err != nil {
		return err
	}
	if err := c.clusters.sync(ctx); err != nil {
		return err
	}
	if err := c.leases.sync(ctx); err != nil {
		return err
	}
	if err := c.pools.sync(ctx); err != nil {
		return err
	}
	return c.inventories.sync(ctx)
}

// start runs every cache until ctx ends, poking on changes of jobs,
// reservations and inventories (what a cycle decides on), and returns once
// each has listed. stop ends them and waits.
func (c *caches) start(ctx context.Context, poke func()) (stop func(), err error) {
	c.jobs.poke, c.reservations.poke, c.inventories.poke = poke, poke, poke
	c.following = true
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	ready := make(chan struct{}, 8)
	run := func(f func(context.Context, func())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx, func() { ready <- struct{}{} })
		}()
	}
	run(c.counters.run)
	run(c.reservations.run)
	run(c.jobs.run)
	run(c.queues.run)
	run(c.clusters.run)
	run(c.leases.run)
	run(c.inventories.run)
	run(c.pools.run)
	stop = func() { cancel(); wg.Wait() }
	for range 8 {
		select {
		case <-ready:
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		}
	}
	return stop, nil
}

// waiter is a cache a snapshot waits for.
type waiter interface {
	waitFor(ctx context.Context, rev int64, timeout time.Duration) error
	relist()
	kind() string
}

// snapshot is what one cycle decides on, taken from the caches. The
// ledger's rule (fleet.go) holds in meaning: the booking counters are
// taken first, then the reservations once they are current to every
// booking the counters show (a booking writes both at one revision), so a
// booking the decision does not see fails its counter guard. The jobs
// (with the reservations, joined under both caches' locks), queues,
// clusters and inventories are taken after; a job that changed since
// fails its revision guard. Before that, the caches wait for this
// leader's own writes (wrote: jobs; booked: the ledger), so a cycle does
// not conflict with its own last bookings.
func (c *caches) snapshot(ctx context.Context, wrote, booked int64) (f *fleet, err error) {
	// A cache that does not reach a revision it must reach in time lists
	// again (relist), and the cycle fails: the next one decides.
	var waited time.Duration
	var waits []any
	took := func(what string, t0 time.Time) {
		d := time.Since(t0)
		waited += d
		if ms := d.Milliseconds(); ms > 0 {
			waits = append(waits, what, ms)
		}
	}
	defer func() {
		if f != nil {
			f.waited, f.waits = waited, waits
		}
	}()
	wait := func(w waiter, rev int64) error {
		defer took("wait."+w.kind(), time.Now())
		err := w.waitFor(ctx, rev, cacheWait)
		if err != nil && ctx.Err() == nil {
			w.relist()
		}
		return err
	}
	var smallRevs <-chan newestResult
	if c.following {
		smallRevs = c.newestSmall(ctx)
	}
	if err := wait(c.counters, booked); err != nil {
		return nil, err
	}
	if err := wait(c.reservations, booked); err != nil {
		return nil, err
	}
	if err := wait(c.jobs, wrote); err != nil {
		return nil, err
	}
	f = &fleet{received: map[string]time.Time{}, queueRevs: map[string]int64{},
		revisions: map[string]int64{}}
	c.counters.mu.RLock()
	versions := maps.Clone(c.counters.items)
	f.revisions[c.counters.r.Kind()] = c.counters.rev
	c.counters.mu.RUnlock()
	var newest int64
	for _, v := range versions {
		newest = max(newest, v.Revision)
	}
	// Every booking writes its reservation at its counters' revision, so
	// the reservations get there.
	if err := wait(c.reservations, newest); err != nil {
		return nil, err
	}
	c.snapshotJobs(f, versions)
	// The caches follow separate watches, so a cordon or a queue change
	// committed before the job event that started this cycle may not have
	// reached its cache yet: the newest revision of each small kind (queues,
	// clusters, pools) was read (newestSmall, started before the waits
	// above so that the two overlap), and its cache must reach it. A
	// snapshot with no pending and no terminating job decides nothing
	// (Cycle calls no decide), so it does not wait: the read can take
	// hundreds of milliseconds while etcd commits (its backend blocks reads
	// for the commit's fsync), and a job submitted meanwhile would wait for
	// it. (A fresh read listed them after the jobs already.)
	if c.following && (len(f.pendingJobs) > 0 || len(f.terminating) > 0) {
		t0 := time.Now()
		nr := <-smallRevs
		took("newest", t0)
		if nr.err != nil {
			return nil, fmt.Errorf("newest queues, clusters and pools: %w", nr.err)
		}
		for i, w := range c.small() {
			if err := wait(w, nr.revs[i]); err != nil {
				return nil, err
			}
		}
	}
	c.queues.mu.RLock()
	for _, q := range c.queues.items {
		f.queues = append(f.queues, q.Object)
		f.queueRevs[q.Name] = q.Revision
	}
	f.revisions[c.queues.r.Kind()] = c.queues.rev
	c.queues.mu.RUnlock()
	slices.SortFunc(f.queues, func(a, b *v1alpha1.Queue) int { return strings.Compare(a.Name, b.Name) })
	c.pools.mu.RLock()
	for _, p := range c.pools.items {
		f.pools = append(f.pools, p.Object)
	}
	f.revisions[c.pools.r.Kind()] = c.pools.rev
	c.pools.mu.RUnlock()
	slices.SortFunc(f.pools, func(a, b *v1alpha1.GPUPool) int { return strings.Compare(a.Name, b.Name) })
	if err := c.snapshotClusters(f); err != nil {
		return nil, err
	}
	return f, nil
}

// smallKind is a cache of a small kind whose writes come from other
// owners (a cordon, a quota change).
type smallKind interface {
	waiter
	newest() store.Newest
}

// small are the caches of the small kinds, in newestSmall's order.
func (c *caches) small() []smallKind { return []smallKind{c.queues, c.clusters, c.pools} }

// newestResult is what newestSmall read.
type newestResult struct {
	revs []int64
	err  error
}

// newestSmall reads the store's newest revision of each small kind, in
// one read (store.NewestRevisions), in the background: the channel gets
// the answer.
func (c *caches) newestSmall(ctx context.Context) <-chan newestResult {
	out := make(chan newestResult, 1)
	small := c.small()
	kinds := make([]store.Newest, len(small))
	for i, w := range small {
		kinds[i] = w.newest()
	}
	go func() {
		revs, err := store.NewestRevisions(ctx, kinds...)
		out <- newestResult{revs, err}
	}()
	return out
}

// snapshotJobs takes the ledger (the booking counters, versions, and the
// reservations as the cache holds them now, at least as new as the
// counters: snapshot waited for that) and, at once, the pending jobs, the
// reservations with their jobs and the jobs' counts from the jobs' index
// (jobIndex.take), under both caches' locks: the index keeps the
// reservations joined with their jobs as either changes, and a cycle
// copies the join.
func (c *caches) snapshotJobs(f *fleet, versions map[string]store.Item[*ledger.ClusterVersion]) {
	c.jobs.mu.RLock()
	defer c.jobs.mu.RUnlock()
	c.reservations.mu.RLock()
	defer c.reservations.mu.RUnlock()
	f.ledger = ledger.NewBookingState(c.reservations.rev, versions)
	f.revisions[c.reservations.r.Kind()] = c.reservations.rev
	f.revisions[c.jobs.r.Kind()] = c.jobs.rev
	c.index.take(f, c.jobs.items)
}

// snapshotClusters keeps the inventories of Ready clusters (a cordoned or
// draining cluster is not Ready) whose agent is not known to be cut off
// from the hub cluster (a member placed there would not start: its agent
// does not see it), with their drained nodes (spec.drainedNodes)
// unschedulable.
func (c *caches) snapshotClusters(f *fleet) error {
	c.clusters.mu.RLock()
	ready := map[string]bool{}
	drained := map[string][]string{}
	for _, cl := range c.clusters.items {
		ready[cl.Name] = clusterReady(cl.Object)
		drained[cl.Name] = cl.Object.Spec.DrainedNodes
		f.registered = append(f.registered, cl)
	}
	f.revisions[c.clusters.r.Kind()] = c.clusters.rev
	c.clusters.mu.RUnlock()
	c.leases.mu.RLock()
	f.leases = make(map[string]*registry.Lease, len(c.leases.items))
	for name, l := range c.leases.items {
		f.leases[name] = l.Object
	}
	c.leases.mu.RUnlock()
	slices.SortFunc(f.registered, func(a, b store.Item[*v1alpha1.Cluster]) int { return strings.Compare(a.Name, b.Name) })

	c.inventories.mu.RLock()
	names := slices.Sorted(maps.Keys(c.inventories.items))
	for _, name := range names {
		it := c.inventories.items[name]
		if !ready[name] {
			f.unready = append(f.unready, it)
			continue
		}
		p := c.parsed[name]
		if p.err != nil {
			c.inventories.mu.RUnlock()
			return p.err
		}
		f.clusters = append(f.clusters, p.inv) // its nodes are the cache's: ownNodes before a change
		f.received[name] = it.Object.Received
	}
	f.revisions[c.inventories.r.Kind()] = c.inventories.rev
	c.inventories.mu.RUnlock()
	f.owned = make([]bool, len(f.clusters))
	for ci := range f.clusters {
		ds := drained[f.clusters[ci].Name]
		for ni := range f.clusters[ci].Nodes {
			if len(ds) > 0 && slices.Contains(ds, f.clusters[ci].Nodes[ni].Name) {
				f.ownNodes(ci)[ni].Unschedulable = true
			}
		}
	}
	f.resolvePools()
	return nil
}
