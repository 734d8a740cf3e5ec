// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"fmt"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// drains maps the name of each cluster that is drained, or has drained
// nodes, to its record.
type drains map[string]*v1alpha1.Cluster

// readClusters reads the clusters (registry records, read-only) and keeps
// those with a drain, the states of those Lost or NotReady (loss.go) and
// every cluster's link to the hub cluster (fencewait.go), from the record
// with its lease applied (registry.Lease: a heartbeat renews the lease and
// rewrites the record only now and then).
func (d *Dispatcher) readClusters(ctx context.Context) (drains, lostClusters, heard, error) {
	out, lost, beats := drains{}, lostClusters{}, heard{}
	leases, err := registry.ListLeases(ctx, d.leases)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list cluster leases: %w", err)
	}
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := d.clusters.List(ctx, opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list clusters: %w", err)
		}
		for _, it := range res.Items {
			if c := it.Object; c.Spec.Drain || len(c.Spec.DrainedNodes) > 0 {
				out[it.Name] = c
			}
			if st := it.Object.Status.State; st == v1alpha1.ClusterLost || st == v1alpha1.ClusterNotReady {
				lost[it.Name] = st
			}
			leases[it.Name].Object.Apply(it.Object)
			beats[it.Name] = linkOf(it.Object)
		}
		if res.Continue == "" {
			return out, lost, beats, nil
		}
		opts.Continue = res.Continue
	}
}

// notifyDrains pokes when a cluster's drain (spec.drain, spec.drainedNodes)
// or its being Lost or NotReady changes, until ctx ends or the watch
// closes; the other writes to cluster records (heartbeats, every few
// seconds per cluster) do not poke.
func notifyDrains(ctx context.Context, ch <-chan store.WatchEvent[*v1alpha1.Cluster], poke func()) {
	seen := map[string]string{} // cluster -> drainKey/lossKey; absent: neither
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			key := drainKey(ev)
			if st := lossKey(ev); st != "" {
				key += "/" + st
			}
			if ev.Type == store.Error || key != seen[ev.Name] {
				poke()
			}
			seen[ev.Name] = key
		}
	}
}

// lossKey is the cluster's state after ev when the dispatcher acts on it
// (Lost, NotReady: loss.go), else "".
func lossKey(ev store.WatchEvent[*v1alpha1.Cluster]) string {
	if c := ev.Object; ev.Type != store.Deleted && ev.Type != store.Error && c != nil &&
		(c.Status.State == v1alpha1.ClusterLost || c.Status.State == v1alpha1.ClusterNotReady) {
		return string(c.Status.State)
	}
	return ""
}

// drainKey says what of a cluster is drained after ev ("" for nothing).
func drainKey(ev store.WatchEvent[*v1alpha1.Cluster]) string {
	c := ev.Object
	if ev.Type == store.Error || ev.Type == store.Deleted || c == nil || !c.Spec.Drain && len(c.Spec.DrainedNodes) == 0 {
		return ""
	}
	return fmt.Sprint(c.Spec.Drain, c.Spec.DrainedNodes)
}

// drained returns the first member of the reservation on a drained
// cluster or node, or nil.
func (dr drains) drained(res *ledger.Reservation) *ledger.Member {
	for i := range res.Members {
		m := &res.Members[i]
		if registry.Drained(dr[m.Cluster], m.Node) {
			return m
		}
	}
	return nil
}

// drain moves a gang with a member on a drained cluster or node: it
// decides an abort with reason Drained, whole, while preparing or after the
// commit; members are deleted with the job's preemption grace (like a
// preemption) and the job is requeued at once, without backoff and without
// counting a restart (finish). The scheduler then places it elsewhere: a
// drained cluster is cordoned, a drained node unschedulable.
func (d *Dispatcher) drain(s *scope) bool {
	if cur := current(s); cur != nil && cur.Phase != v1alpha1.DispatchPreparing && cur.Phase != v1alpha1.DispatchCommitted {
		return false // already tearing down: finish carries it out
	}
	m := s.drains.drained(s.res)
	if m == nil {
		return false
	}
	what := "cluster " + m.Cluster
	if c := s.drains[m.Cluster]; !c.Spec.Drain {
		what = "node " + m.Node + " of cluster " + m.Cluster
	}
	s.decision = &jobs.Decision{Dispatch: s.dispatch(v1alpha1.DispatchAborting, v1alpha1.ReasonDrained,
		fmt.Sprintf("member %d is on %s, which is drained; moving the whole gang of epoch %d", m.Index, what, s.res.Epoch))}
	s.create, s.stamp = false, false
	s.teardown = &teardown{grace: grace(s.job.Object)}
	return true
}
