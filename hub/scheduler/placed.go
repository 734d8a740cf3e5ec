// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// reservation turns a placement into a ledger reservation, numbering the
// members in assignment order (cluster, node).
func (s *Scheduler) reservation(f *fleet, g *placement.Gang, p *placement.Placement, epoch int64, now time.Time) *ledger.Reservation {
	r := &ledger.Reservation{Job: g.ID, Epoch: epoch, Gang: ledger.GangOf(*g), Assignments: ledger.AssignmentsOf(p.Assignments),
		Level: string(p.Level), Domain: p.Domain, Clusters: p.Clusters, Booked: now}
	res := resourceOf(g)
	var idx int32
	for _, a := range p.Assignments {
		product := ""
		if n := f.nodes[a.Cluster+"/"+a.Node]; n != nil {
			product = n.Product
		}
		vnode := v1alpha1.VirtualNodeName(a.Cluster, inventory.PoolName(product, res))
		for range a.Members {
			r.Members = append(r.Members, ledger.Member{Index: idx, Cluster: a.Cluster, Node: a.Node,
				VirtualNode: vnode, Domain: p.Domain})
			idx++
		}
	}
	return r
}

// booking is what the job records of a reservation.
func booking(j *v1alpha1.Job, r *ledger.Reservation, p *placement.Placement, now time.Time) jobs.Booking {
	b := jobs.Booking{Epoch: r.Epoch, Clusters: r.Clusters, Domain: r.Domain, Message: placedMessage(j, p), At: now,
		Members: make([]v1alpha1.MemberStatus, len(r.Members))}
	for i, m := range r.Members {
		b.Members[i] = v1alpha1.MemberStatus{Index: m.Index, Cluster: m.Cluster, Node: m.Node,
			Domain: m.Domain, Phase: v1alpha1.MemberPending}
	}
	return b
}

// placedMessage says where a gang went, and whether its preferred level was met.
func placedMessage(j *v1alpha1.Job, p *placement.Placement) string {
	where := p.Domain
	if where == "" {
		where = "clusters " + strings.Join(p.Clusters, ", ")
	}
	msg := fmt.Sprintf("%d members on %d nodes in %s (epoch %d)", j.Spec.Gang.Members, len(p.Assignments), where, j.Status.Epoch+1)
	if pref := j.Spec.Placement.Topology.Preferred; pref != "" && p.Level != "" &&
		inventory.Level(pref).Rank() < p.Level.Rank() {
		msg += fmt.Sprintf("; preferred %s not met, placed within one %s", pref, p.Level)
	}
	return msg
}
