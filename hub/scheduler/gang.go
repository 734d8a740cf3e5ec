// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"time"

	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/devicesel"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// GangOf maps a (defaulted) job to the gang placement decides on. The
// cluster selector is passed whole (matchLabels and matchExpressions); the
// pod template's activeDeadlineSeconds is the gang's Estimate. A job with
// spec.roles becomes a gang with roles (each with its template's
// tolerations), whose estimate is the longest deadline of its roles.
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
	g.ComputeDomain = s.Gang.ComputeDomain && len(s.Roles) == 0
	if r := devicesel.NewRequest(s.Gang.Devices); r != nil {
		g.Devices = r
	}
	switch {
	case s.Gang.MIG != nil:
		g.MIGResource = string(s.Gang.MIG.ResourceName())
		g.GPUsPerMember = int(max(1, s.Gang.MIG.PerMember))
	case s.Gang.Shared != nil:
		g.Shared = sharedOf(s.Gang.Shared)
		g.GPUsPerMember = int(max(1, s.Gang.Shared.PerMember))
	default:
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
	if len(s.Roles) > 0 {
		setRoles(&g, s)
	}
	if j.Status.SubmitTime != nil {
		g.Submitted = j.Status.SubmitTime.Time.Time
	} else {
		g.Submitted = j.CreationTimestamp.Time
	}
	return g
}

// setRoles makes g the gang of a job with roles: members summed over the
// roles, the GPU roles' MIG resource or shared GPUs, and an estimate only when every role
// has a deadline (the longest).
func setRoles(g *placement.Gang, s *v1alpha1.JobSpec) {
	g.Members, g.GPUsPerMember, g.MIGResource, g.Shared, g.Tolerations, g.Estimate = int(s.MemberCount()), 0, "", nil, nil, 0
	estimate := time.Duration(0)
	for i := range s.Roles {
		r := &s.Roles[i]
		gpm := int(r.GPUsPerMember)
		if r.MIG != nil {
			g.MIGResource = string(r.MIG.ResourceName())
			gpm = int(max(1, r.MIG.PerMember))
		}
		if r.Shared != nil {
			g.Shared = sharedOf(r.Shared)
			gpm = int(max(1, r.Shared.PerMember))
		}
		g.Roles = append(g.Roles, placement.Role{Name: r.Name, Members: int(r.Members), GPUsPerMember: gpm,
			Tolerations: r.Template.Spec.Tolerations})
		d := r.Template.Spec.ActiveDeadlineSeconds
		if d == nil || *d <= 0 || estimate < 0 {
			estimate = -1 // one role without a limit: the gang's end is unknown
			continue
		}
		estimate = max(estimate, time.Duration(*d)*time.Second)
	}
	g.Estimate = max(0, estimate)
}

// resourceOf is the extended resource a gang's members request.
func resourceOf(g *placement.Gang) string { return g.Resource() }

// sharedOf maps a job's request for GPU shares to the engine's.
func sharedOf(sh *v1alpha1.SharedGPURequest) *placement.SharedRequest {
	return &placement.SharedRequest{Strategy: string(sh.Strategy)}
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
