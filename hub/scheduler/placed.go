package scheduler

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// VirtualNodeName is the hub-cluster virtual node of a cluster's GPU pool.
func VirtualNodeName(cluster, pool string) string { return "shoal-" + cluster + "-" + pool }

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
		vnode := VirtualNodeName(a.Cluster, inventory.PoolName(product, res))
		for range a.Members {
			r.Members = append(r.Members, ledger.Member{Index: idx, Cluster: a.Cluster, Node: a.Node,
				VirtualNode: vnode, Domain: p.Domain})
			idx++
		}
	}
	return r
}

// placedJob returns the job as Placed under the reservation.
func placedJob(j *v1alpha1.Job, r *ledger.Reservation, p *placement.Placement, now time.Time) *v1alpha1.Job {
	next := CopyJob(j)
	next.ResourceVersion = ""
	delete(next.Annotations, AnnotationNotBefore)
	t := metav1.NewTime(now)
	st := &next.Status
	st.Phase, st.Epoch = v1alpha1.JobPlaced, r.Epoch
	msg := placedMessage(j, p)
	st.Placement = &v1alpha1.PlacementStatus{Clusters: r.Clusters, Domain: r.Domain, Explanation: msg, Time: &t}
	st.Members = make([]v1alpha1.MemberStatus, len(r.Members))
	for i, m := range r.Members {
		st.Members[i] = v1alpha1.MemberStatus{Index: m.Index, Cluster: m.Cluster, Node: m.Node,
			Domain: m.Domain, Phase: v1alpha1.MemberPending}
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.JobConditionPlaced,
		Status: metav1.ConditionTrue, Reason: "Reserved", Message: msg, LastTransitionTime: t,
		ObservedGeneration: j.Generation})
	meta.RemoveStatusCondition(&st.Conditions, ConditionPreempted)
	return next
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
