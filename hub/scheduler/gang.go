// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"time"

	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// GangOf maps a (defaulted) job to the gang placement decides on. The
// cluster selector is passed whole (matchLabels and matchExpressions); the
// pod template's activeDeadlineSeconds is the gang's Estimate.
func GangOf(j *v1alpha1.Job) placement.Gang {
	s := &j.Spec
	prio, _ := s.PriorityClass.Value()
	g := placement.Gang{
		ID:          j.Name,
		Queue:       s.Queue,
		Priority:    prio,
		Members:     int(s.Gang.Members),
		MaxClusters: int(s.Placement.MaxClusters),
		Products:    s.Placement.GPUProducts,
		Tolerations: s.Template.Spec.Tolerations,
		Policy:      placement.Policy(s.Placement.Policy),
		Topology: placement.Topology{
			Required:  inventory.Level(s.Placement.Topology.Required),
			Preferred: inventory.Level(s.Placement.Topology.Preferred),
		},
	}
	if s.Gang.MIG != nil {
		g.MIGResource = string(s.Gang.MIG.ResourceName())
		g.GPUsPerMember = int(max(1, s.Gang.MIG.PerMember))
	} else {
		g.GPUsPerMember = int(s.Gang.GPUsPerMember)
	}
	if s.Placement.ClusterSelector != nil {
		g.ClusterSelector = s.Placement.ClusterSelector.DeepCopy()
	}
	if s.Preemption.Preemptible != nil {
		g.Preemptible = *s.Preemption.Preemptible
	}
	if s.Preemption.GracePeriodSeconds != nil {
		g.GracePeriod = time.Duration(*s.Preemption.GracePeriodSeconds) * time.Second
	}
	if d := s.Template.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		// The time limit every member pod runs under (the kubelet ends a
		// member at it): the gang's estimate, so it may backfill nodes held
		// for a bigger gang that it frees in time.
		g.Estimate = time.Duration(*d) * time.Second
	}
	if j.Status.SubmitTime != nil {
		g.Submitted = j.Status.SubmitTime.Time
	} else {
		g.Submitted = j.CreationTimestamp.Time
	}
	return g
}

// resourceOf is the extended resource a gang's members request.
func resourceOf(g *placement.Gang) string {
	if g.MIGResource != "" {
		return g.MIGResource
	}
	return inventory.ResourceGPU
}

// queuesOf maps the stored queues to the placement queue tree: weights,
// and quotas keyed by GPU class in both (apis/v1alpha1/gpuclass.go is the
// one table from class to products that validation and the engine share).
func queuesOf(qs []*v1alpha1.Queue) []placement.Queue {
	out := make([]placement.Queue, 0, len(qs))
	for _, q := range qs {
		pq := placement.Queue{Name: q.Name, Weight: 1, Reclaim: q.Spec.ReclaimBorrowed}
		if q.Spec.Weight != nil {
			pq.Weight = float64(*q.Spec.Weight)
		}
		for class, quota := range q.Spec.Quotas {
			if pq.Quotas == nil {
				pq.Quotas = make(map[string]placement.Quota, len(q.Spec.Quotas))
			}
			pl := placement.Quota{Nominal: int(quota.Nominal)}
			if b := quota.BorrowingLimit; b != nil {
				pl.BorrowingLimit = ptr.To(int(*b))
			}
			pq.Quotas[class] = pl
		}
		out = append(out, pq)
	}
	return out
}
