// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// pruneInterval is how often Run deletes long-expired join tokens.
const pruneInterval = time.Hour

// State computes a cluster's state at now from its last heartbeat (or its
// registration time, before the first one), the grace, the fence timeout
// and the fence margin. A cluster turns Lost only after fence + margin: its
// agent stops every member itself once it has gone the fence timeout
// without a successful heartbeat (agent/fence), and the margin covers the
// agent's check interval, the stop of its local pods and the hub's sweep,
// so that the hub never runs a gang elsewhere while the old copy may run.
func State(c *v1alpha1.Cluster, now time.Time, grace, fence, margin time.Duration) (v1alpha1.ClusterState, string, string) {
	last := c.Status.LastHeartbeat
	if last == nil {
		last = c.Status.RegisteredTime
	}
	if last == nil {
		return v1alpha1.ClusterPending, "NeverSeen", "the agent has not reported yet"
	}
	// Stored times have whole seconds (metav1.Time): the beat happened in
	// [last, last+1s). Count from the end of that second so that a cluster
	// never turns NotReady before the grace has really passed.
	silent := now.Sub(last.Add(time.Second))
	switch {
	case silent > fence+margin:
		return v1alpha1.ClusterLost, "FenceTimeoutExpired",
			fmt.Sprintf("no heartbeat for %s, longer than the fence timeout %s plus the margin %s: the agent has fenced itself",
				silent.Round(time.Second), fence, margin)
	case silent > grace:
		return v1alpha1.ClusterNotReady, "HeartbeatMissed",
			fmt.Sprintf("no heartbeat for %s, longer than the grace %s", silent.Round(time.Second), grace)
	case c.Status.LastHeartbeat == nil:
		return v1alpha1.ClusterPending, "AwaitingHeartbeat", "registered; waiting for the agent's first heartbeat"
	case meta.IsStatusConditionFalse(c.Status.Conditions, v1alpha1.ClusterConditionReachable):
		return v1alpha1.ClusterNotReady, "APIServerUnreachable", "the agent cannot reach its cluster's API server"
	case c.Status.Inventory == nil:
		return v1alpha1.ClusterPending, "AwaitingInventory", "waiting for the agent's first inventory report"
	case c.Spec.Drain && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ClusterConditionDrained):
		return v1alpha1.ClusterCordoned, v1alpha1.ReasonDrained, "drained: no gang left; uncordon to take gangs again"
	case c.Spec.Drain:
		return v1alpha1.ClusterDraining, v1alpha1.ReasonDraining, "cordoned and moving its gangs elsewhere"
	case c.Spec.Unschedulable:
		return v1alpha1.ClusterCordoned, "Cordoned", "cordoned: no new gangs"
	}
	return v1alpha1.ClusterReady, "HeartbeatCurrent", "the agent reports on time"
}

// evaluate sets c's state and Ready condition for the current time, and
// its HubClusterReachable condition (hubcluster.go); it reports whether
// they changed.
func (r *Registry) evaluate(c *v1alpha1.Cluster) bool {
	state, reason, msg := State(c, r.clock.Now(), r.cfg.Grace, r.cfg.FenceTimeout, r.cfg.FenceMargin)
	status := metav1.ConditionFalse
	if state == v1alpha1.ClusterReady || state == v1alpha1.ClusterCordoned || state == v1alpha1.ClusterDraining {
		status = metav1.ConditionTrue
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionReady)
	changed := c.Status.State != state || prev == nil || prev.Reason != reason || prev.Status != status
	c.Status.State = state
	if changed {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ClusterConditionReady, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: metav1.NewTime(r.clock.Now()),
		})
	}
	return r.evaluateHubCluster(c) || changed
}

// Run re-evaluates every cluster's state every interval (a quarter of the
// grace, at least a second), and hourly deletes join tokens expired for
// longer than TokenRetention, until ctx ends.
func (r *Registry) Run(ctx context.Context) error {
	t := r.clock.NewTicker(r.HeartbeatInterval())
	defer t.Stop()
	var lastPrune time.Time
	for {
		if err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Cluster liveness sweep")
		}
		if now := r.clock.Now(); now.Sub(lastPrune) >= pruneInterval {
			lastPrune = now
			if n, err := r.PruneTokens(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Prune expired join tokens")
			} else if n > 0 {
				klog.FromContext(ctx).Info("Pruned expired join tokens", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Sweep re-evaluates every cluster once, with the progress of its drain
// (drain.go; the reservations are read only while some cluster drains),
// and writes the ones whose state changed.
func (r *Registry) Sweep(ctx context.Context) error {
	leases, err := r.leaseMap(ctx)
	if err != nil {
		return err
	}
	res, err := r.clusters.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	var reservations []*ledger.Reservation
	if slices.ContainsFunc(res.Items, func(it store.Item[*v1alpha1.Cluster]) bool { return draining(it.Object) }) {
		if reservations, err = r.listReservations(ctx); err != nil {
			return err
		}
	}
	var errs []error
	for _, it := range res.Items {
		before := it.Object.Status.State
		l := leases[it.Name]
		l.Object.Apply(it.Object)
		drained := r.drainProgress(it.Object, reservations)
		if !r.evaluate(it.Object) && !drained {
			continue
		}
		// Guarded by the lease too: a heartbeat since the read renewed it,
		// and this evaluation may count the cluster silent for nothing.
		_, err := r.store.Txn(ctx).If(r.guards(it.Name, &leased{rev: it.Revision, leaseRev: l.Revision})...).
			Then(r.clusters.PutOp(it.Name, it.Object)).Commit()
		if errors.Is(err, store.ErrConflict) {
			continue // a heartbeat or a removal got there first; the next sweep sees it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if before != it.Object.Status.State {
			klog.FromContext(ctx).Info("Cluster state changed", "cluster", it.Name, "from", before, "to", it.Object.Status.State)
		}
	}
	return errors.Join(errs...)
}
