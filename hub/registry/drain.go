// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// Drain cordons a cluster and asks for its gangs to be moved (spec.drain):
// the dispatcher stops every gang with a member on it with the job's
// preemption grace and requeues it without counting a restart, and the
// scheduler places it elsewhere. The Drained condition turns True (the
// state Cordoned, reason Drained) once no gang is left; Cordon(false) ends
// the drain.
func (r *Registry) Drain(ctx context.Context, name string) (*v1alpha1.Cluster, int64, error) {
	return r.changeSpec(ctx, name, func(c *v1alpha1.Cluster) {
		c.Spec.Unschedulable, c.Spec.Drain = true, true
	})
}

// DrainNode drains one node of a cluster (spec.drainedNodes; drain false
// takes it out again): no new member targets it, and gangs with a member
// on it are moved like a cluster drain's.
func (r *Registry) DrainNode(ctx context.Context, cluster, node string, drain bool) (*v1alpha1.Cluster, int64, error) {
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return nil, 0, fmt.Errorf("%w: node %q: %s", ErrInvalid, node, strings.Join(errs, "; "))
	}
	return r.changeSpec(ctx, cluster, func(c *v1alpha1.Cluster) {
		i := slices.Index(c.Spec.DrainedNodes, node)
		switch {
		case drain && i < 0:
			c.Spec.DrainedNodes = append(c.Spec.DrainedNodes, node)
			sort.Strings(c.Spec.DrainedNodes)
		case !drain && i >= 0:
			c.Spec.DrainedNodes = slices.Delete(c.Spec.DrainedNodes, i, i+1)
		}
	})
}

// changeSpec changes a cluster's spec with change and re-evaluates its
// drain and state.
func (r *Registry) changeSpec(ctx context.Context, name string, change func(*v1alpha1.Cluster)) (*v1alpha1.Cluster, int64, error) {
	cl, rev, err := r.updateLeased(ctx, name, func(c *v1alpha1.Cluster) error {
		wasDrain, wasNodes := c.Spec.Drain, len(c.Spec.DrainedNodes)
		change(c)
		switch {
		case !draining(c):
			meta.RemoveStatusCondition(&c.Status.Conditions, v1alpha1.ClusterConditionDrained)
		case c.Spec.Drain && !wasDrain || len(c.Spec.DrainedNodes) > wasNodes:
			// Something more is drained: whether anything is left there is
			// for the next sweep to say.
			r.setDrained(c, false, "waiting for the dispatcher to move the gangs")
		}
		r.evaluate(c)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: cluster %q (shoal cluster list shows the registered ones)", ErrNotFound, name)
	}
	return cl, rev, err
}

// draining reports whether the cluster or any of its nodes is drained.
func draining(c *v1alpha1.Cluster) bool { return c.Spec.Drain || len(c.Spec.DrainedNodes) > 0 }

// Drained reports whether a member on cluster c's node is drained (the
// cluster or the node); the dispatcher moves such gangs.
func Drained(c *v1alpha1.Cluster, node string) bool {
	return c != nil && (c.Spec.Drain || slices.Contains(c.Spec.DrainedNodes, node))
}

// setDrained sets the Drained condition; it reports whether it changed.
func (r *Registry) setDrained(c *v1alpha1.Cluster, done bool, msg string) bool {
	status, reason := metav1.ConditionFalse, v1alpha1.ReasonDraining
	if done {
		status, reason = metav1.ConditionTrue, v1alpha1.ReasonDrained
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionDrained)
	if prev != nil && prev.Status == status && prev.Message == msg {
		return false
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ClusterConditionDrained,
		Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(r.clock.Now())})
	return true
}

// drainProgress sets the Drained condition of a draining cluster from the
// gangs still booked on it (reservations are released only once every
// member is gone); it reports whether the condition changed.
func (r *Registry) drainProgress(c *v1alpha1.Cluster, reservations []*ledger.Reservation) bool {
	if !draining(c) {
		return false
	}
	var left []string
	for _, res := range reservations {
		for _, m := range res.Members {
			if m.Cluster == c.Name && Drained(c, m.Node) {
				left = append(left, res.Job)
				break
			}
		}
	}
	if len(left) == 0 {
		return r.setDrained(c, true, "no gang has a member on the drained cluster or nodes")
	}
	sort.Strings(left)
	msg := fmt.Sprintf("%d gangs still have members on the drained cluster or nodes: %s", len(left), strings.Join(left[:min(len(left), 8)], ", "))
	if len(left) > 8 {
		msg += fmt.Sprintf(" and %d more", len(left)-8)
	}
	return r.setDrained(c, false, msg)
}

// listReservations reads every reservation (the registry's read-only view
// of hub/ledger's records).
func (r *Registry) listReservations(ctx context.Context) ([]*ledger.Reservation, error) {
	reader := ledger.New(r.store).Reservations()
	var out []*ledger.Reservation
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := reader.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		for _, it := range res.Items {
			out = append(out, it.Object)
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}
