// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// KindClusterLeases holds one Lease per registered cluster, under the
// cluster's name.
const KindClusterLeases = "clusterleases"

// Lease is what a cluster's heartbeats renew, apart from its Cluster
// record (as Kubernetes keeps a node's heartbeat in a Lease object and not
// in the Node): the time of its last heartbeat and of the last one that
// said the agent reaches the hub cluster. Every heartbeat writes it; the
// Cluster record is written by a heartbeat only when something else in it
// changes (its state, a condition, the agent's version) or when the
// record's own copy of the times is older than half the grace
// (Registry.recordRefresh). At 100 clusters the heartbeats were about ten
// record writes a second, each one a change of the clusters' revision
// that every scheduling cycle waited for its cache to reach
// (docs/scale.md).
//
// The record keeps the times it had when it was last written, and the
// times a reader acts on are the newer of the record's and the lease's
// (Apply): the registry's liveness, the API's clusters, the dispatcher's
// fencing and the scheduler's heartbeat gauge read both. A hub of the
// previous release reads only the record; half the grace keeps its copy
// young enough that such a replica, sharing the store during a rolling
// upgrade, never counts a cluster silent that beats on time
// (docs/upgrades.md).
type Lease struct {
	// Heartbeat is Cluster.Status.LastHeartbeat.
	Heartbeat metav1.Time `json:"heartbeat"`
	// HubClusterContact is Cluster.Status.LastHubClusterContact.
	HubClusterContact *metav1.Time `json:"hubClusterContact,omitempty"`
}

// NewLeaseReader returns the registry's leases on st, read-only, for the
// hub packages that read them beside the cluster records.
func NewLeaseReader(st *store.Store) store.Reader[*Lease] {
	return store.NewReader(st, KindClusterLeases, store.JSONCodec[*Lease]())
}

// Apply sets c's heartbeat times to the lease's where they are newer; a
// nil lease (none written yet: a cluster registered by a hub before
// leases, or that has not beaten since) changes nothing. c must be the
// caller's own copy.
func (l *Lease) Apply(c *v1alpha1.Cluster) {
	if l == nil || c == nil {
		return
	}
	c.Status.LastHeartbeat = newer(c.Status.LastHeartbeat, &l.Heartbeat)
	c.Status.LastHubClusterContact = newer(c.Status.LastHubClusterContact, l.HubClusterContact)
}

// LastHeartbeat is c's last heartbeat: the newer of its record's and its
// lease's (l nil: none).
func LastHeartbeat(c *v1alpha1.Cluster, l *Lease) *metav1.Time {
	if l == nil {
		return c.Status.LastHeartbeat
	}
	return newer(c.Status.LastHeartbeat, &l.Heartbeat)
}

// newer returns the later of two times (nil: none), as a copy.
func newer(a, b *metav1.Time) *metav1.Time {
	switch {
	case b == nil || b.IsZero():
		return a
	case a == nil || a.Before(b):
		t := *b
		return &t
	}
	return a
}

// leased is a cluster record with its lease applied, and the revisions of
// both as read (0: absent).
type leased struct {
	c        *v1alpha1.Cluster
	rev      int64
	leaseRev int64
	// stored is the record's own LastHeartbeat, before the lease.
	stored *metav1.Time
}

// getLeased reads cluster name and its lease; a write guarded by both
// revisions (guards) fails if either changed since.
func (r *Registry) getLeased(ctx context.Context, name string) (*leased, error) {
	l, leaseRev, err := r.leases.Get(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	c, rev, err := r.clusters.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	out := &leased{c: c, rev: rev, leaseRev: leaseRev, stored: c.Status.LastHeartbeat}
	l.Apply(c)
	return out, nil
}

// guards hold while neither the record nor the lease changed since read.
func (r *Registry) guards(name string, lc *leased) []store.Cond {
	return []store.Cond{r.clusters.RevIs(name, lc.rev), r.leases.RevIs(name, lc.leaseRev)}
}

// updateLeased applies fn to cluster name with its lease applied, and
// writes the record if neither changed since read (retrying otherwise),
// with guards that must hold too. It returns the record written, with
// the lease applied, and its revision; an error from fn is returned as
// is, and nothing is written.
func (r *Registry) updateLeased(ctx context.Context, name string, fn func(*v1alpha1.Cluster) error,
	guards ...store.Cond) (*v1alpha1.Cluster, int64, error) {
	for {
		lc, err := r.getLeased(ctx, name)
		if err != nil {
			return nil, 0, err
		}
		if err := fn(lc.c); err != nil {
			return nil, 0, err
		}
		rev, err := r.store.Txn(ctx).If(append(r.guards(name, lc), guards...)...).
			Then(r.clusters.PutOp(name, lc.c)).Commit()
		if err == nil {
			return lc.c, rev, nil
		}
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return nil, 0, err
		}
		if len(guards) > 0 {
			if _, gerr := r.store.Txn(ctx).If(guards...).Commit(); gerr != nil {
				return nil, 0, gerr // a caller's guard failed: retrying cannot help
			}
		}
	}
}

// leaseMap reads every lease, by cluster name, with its revision.
func (r *Registry) leaseMap(ctx context.Context) (map[string]store.Item[*Lease], error) {
	return ListLeases(ctx, NewLeaseReader(r.store))
}

// ListLeases reads every lease of leases (NewLeaseReader), by cluster
// name, with its revision; a cluster without one is absent (its zero Item
// has a nil Object, which Apply ignores).
func ListLeases(ctx context.Context, leases store.Reader[*Lease]) (map[string]store.Item[*Lease], error) {
	out := map[string]store.Item[*Lease]{}
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := leases.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range res.Items {
			out[it.Name] = it
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// recordRefresh is how old the record's own heartbeat time may get before
// a heartbeat writes the record although nothing else in it changed: half
// the grace. With beats every quarter of the grace (HeartbeatInterval),
// the record's copy is at most about three quarters of the grace old
// when the next beat refreshes it, so a reader of the record alone (a hub
// of the previous release) never finds a beating cluster silent for
// longer than the grace.
func (r *Registry) recordRefresh() time.Duration { return r.cfg.Grace / 2 }

// recordChanged reports whether heartbeat-renewed cluster c must be
// written to its record: something but the heartbeat times changed from
// before (both with the lease applied), or the record's own heartbeat
// time (stored) is older than recordRefresh at now.
func (r *Registry) recordChanged(before, c *v1alpha1.Cluster, stored *metav1.Time, now time.Time) bool {
	if stored == nil || now.Sub(stored.Time) >= r.recordRefresh() {
		return true
	}
	a, b := before.DeepCopy(), c.DeepCopy()
	for _, x := range []*v1alpha1.Cluster{a, b} {
		x.Status.LastHeartbeat, x.Status.LastHubClusterContact = nil, nil
	}
	return !equality.Semantic.DeepEqual(a, b)
}
