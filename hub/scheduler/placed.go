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
// members in assignment order (cluster, node), role after role in spec
// order for a gang with roles. A member of a CPU-only role has no node; its
// hub pod is bound to the virtual node of the gang's first member in its
// cluster.
func (s *Scheduler) reservation(f *fleet, g *placement.Gang, p *placement.Placement, epoch int64, now time.Time) *ledger.Reservation {
	r := &ledger.Reservation{Job: g.ID, Epoch: epoch, Gang: ledger.GangOf(*g), Assignments: ledger.AssignmentsOf(p.Assignments),
		Level: string(p.Level), Domain: p.Domain, Clusters: p.Clusters, Booked: now}
	res := resourceOf(g)
	vnodes := map[string]string{} // cluster → virtual node of its first GPU member
	var idx int32
	add := func(a placement.Assignment) {
		vnode := vnodes[a.Cluster]
		if a.Node != "" {
			product := ""
			if n := f.node(a.Cluster, a.Node); n != nil {
				product = n.Product
			}
			vnode = v1alpha1.VirtualNodeName(a.Cluster, inventory.PoolName(product, res))
			if vnodes[a.Cluster] == "" {
				vnodes[a.Cluster] = vnode
			}
		}
		for range a.Members {
			r.Members = append(r.Members, ledger.Member{Index: idx, Role: a.Role, Cluster: a.Cluster, Node: a.Node,
				VirtualNode: vnode, Domain: p.Domain})
			idx++
		}
	}
	if len(g.Roles) == 0 {
		for _, a := range p.Assignments {
			add(a)
		}
		return r
	}
	for _, a := range p.Assignments { // the virtual nodes of the GPU members first
		if a.Node != "" && vnodes[a.Cluster] == "" {
			add(placement.Assignment{Cluster: a.Cluster, Node: a.Node})
		}
	}
	for _, ro := range g.Roles {
		for _, a := range p.Assignments {
			if a.Role == ro.Name {
				add(a)
			}
		}
	}
	return r
}

// booking is what the job records of a reservation.
func booking(j *v1alpha1.Job, r *ledger.Reservation, p *placement.Placement, now time.Time) jobs.Booking {
	b := jobs.Booking{Epoch: r.Epoch, Clusters: r.Clusters, Domain: r.Domain, Message: placedMessage(j, p), At: now,
		Members: make([]v1alpha1.MemberStatus, len(r.Members))}
	for i, m := range r.Members {
		b.Members[i] = v1alpha1.MemberStatus{Index: m.Index, Role: m.Role, Cluster: m.Cluster, Node: m.Node,
			Namespace: v1alpha1.ClusterNamespace(m.Cluster), Domain: m.Domain, Phase: v1alpha1.MemberPending}
	}
	return b
}

// placedMessage says where a gang went, and whether its preferred level was met.
func placedMessage(j *v1alpha1.Job, p *placement.Placement) string {
	where := p.Domain
	if where == "" {
		where = "clusters " + strings.Join(p.Clusters, ", ")
	}
	msg := fmt.Sprintf("%d members on %d nodes in %s (epoch %d)", j.Spec.MemberCount(), nodesOf(p), where, j.Status.Epoch+1)
	if pref := j.Spec.Placement.Topology.Preferred; pref != "" && p.Level != "" &&
		inventory.Level(pref).Rank() < p.Level.Rank() {
		msg += fmt.Sprintf("; preferred %s not met, placed within one %s", pref, p.Level)
	}
	return msg
}

// nodesOf counts the distinct nodes of a placement (not the CPU-only
// roles' assignments, which have none).
func nodesOf(p *placement.Placement) int {
	seen := map[string]bool{}
	for _, a := range p.Assignments {
		if a.Node != "" {
			seen[a.Cluster+"/"+a.Node] = true
		}
	}
	return len(seen)
}
