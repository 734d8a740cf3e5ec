// SPDX-License-Identifier: Apache-2.0

package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// The stored record types below are the ledger's own schema: placement can
// change its engine structs without changing what is stored. Their JSON
// names are the Go field names placement.Gang and placement.Assignment were
// stored under before the ledger had types of its own, so records written
// by earlier hubs read unchanged (TestLegacyReservation).

// Gang is the stored form of the gang a reservation was booked for.
type Gang struct {
	// ID identifies the gang (the job's key).
	ID string `json:"ID"`
	// Queue is the leaf queue path.
	Queue string `json:"Queue"`
	// Priority is the priority class value.
	Priority int32 `json:"Priority"`
	// Preemptible says whether other gangs may preempt this one.
	Preemptible bool `json:"Preemptible"`
	// GracePeriod is the time a victim gets to checkpoint (nanoseconds).
	GracePeriod time.Duration `json:"GracePeriod"`
	// Members is the number of member pods.
	Members int `json:"Members"`
	// GPUsPerMember is the GPUs (or MIG slices with MIGResource) per member.
	GPUsPerMember int `json:"GPUsPerMember"`
	// MIGResource, when set, makes members ask for MIG slices.
	MIGResource string `json:"MIGResource"`
	// Shared, when set, makes members ask for shares of shared GPUs
	// (GPUsPerMember counts shares); absent in records of earlier hubs.
	Shared *placement.SharedRequest `json:"Shared,omitempty"`
	// Products lists the GPU products the gang accepts; empty accepts any.
	Products []string `json:"Products"`
	// ClusterSelector is the selector's matchLabels, the only part hubs
	// stored before ClusterLabelSelector. It is read when
	// ClusterLabelSelector is absent (a record of an earlier hub) and still
	// written, so that an earlier hub reading a newer record keeps at least
	// the labels it understood.
	ClusterSelector map[string]string `json:"ClusterSelector"`
	// ClusterLabelSelector is the whole cluster selector, matchExpressions
	// included; it wins over ClusterSelector when present.
	ClusterLabelSelector *metav1.LabelSelector `json:"ClusterLabelSelector,omitempty"`
	// Clusters, when set, lists the clusters the gang may use.
	Clusters []string `json:"Clusters"`
	// Pools are the GPU pools of the gang's queue as placement filters
	// nodes by them (absent in records of earlier hubs: anywhere).
	Pools []placement.PoolFilter `json:"Pools,omitempty"`
	// ComputeDomain says the gang gets a ComputeDomain per NVLink clique
	// it uses: its cliques are held against other compute-domain gangs
	// (absent in records of earlier hubs: false).
	ComputeDomain bool `json:"ComputeDomain,omitempty"`
	// Tolerations let members land on tainted nodes.
	Tolerations []corev1.Toleration `json:"Tolerations"`
	// Topology is the gang's topology rule.
	Topology Topology `json:"Topology"`
	// MaxClusters bounds how many clusters the gang may span.
	MaxClusters int `json:"MaxClusters"`
	// Policy is BinPack or Spread.
	Policy string `json:"Policy"`
	// Submitted is when the gang was submitted.
	Submitted time.Time `json:"Submitted"`
	// Estimate is how long the gang expects to run (nanoseconds; 0 unknown).
	Estimate time.Duration `json:"Estimate"`
	// Roles are the kinds of member of a gang with roles.
	Roles []Role `json:"Roles,omitempty"`
}

// Role is the stored form of one role of a gang.
type Role struct {
	// Name is the role's name.
	Name string `json:"Name"`
	// Members is the role's member count.
	Members int `json:"Members"`
	// GPUsPerMember is the GPUs (or MIG slices) per member; 0 CPU-only.
	GPUsPerMember int `json:"GPUsPerMember"`
	// Tolerations let the role's members land on tainted nodes.
	Tolerations []corev1.Toleration `json:"Tolerations,omitempty"`
}

// Topology is the stored form of a gang's topology rule.
type Topology struct {
	// Required is the loosest level allowed.
	Required string `json:"Required"`
	// Preferred is the level the gang would like.
	Preferred string `json:"Preferred"`
}

// Assignment is the stored form of one node of a gang's placement.
type Assignment struct {
	// Cluster and Node name the node.
	Cluster string `json:"Cluster"`
	Node    string `json:"Node"`
	// Members is how many of the gang's members run on the node.
	Members int `json:"Members"`
	// Role is the role of those members (empty without roles).
	Role string `json:"Role,omitempty"`
}

// GangOf is the stored form of g.
func GangOf(g placement.Gang) Gang {
	out := Gang{
		ID: g.ID, Queue: g.Queue, Priority: g.Priority, Preemptible: g.Preemptible, GracePeriod: g.GracePeriod,
		Members: g.Members, GPUsPerMember: g.GPUsPerMember, MIGResource: g.MIGResource, Shared: g.Shared, Products: g.Products,
		ClusterLabelSelector: g.ClusterSelector, Clusters: g.Clusters, Pools: g.Pools, Tolerations: g.Tolerations,
		ComputeDomain: g.ComputeDomain,
		Topology:      Topology{Required: string(g.Topology.Required), Preferred: string(g.Topology.Preferred)},
		MaxClusters:   g.MaxClusters, Policy: string(g.Policy), Submitted: g.Submitted, Estimate: g.Estimate,
	}
	if g.ClusterSelector != nil {
		out.ClusterSelector = g.ClusterSelector.MatchLabels
	}
	for _, r := range g.Roles {
		out.Roles = append(out.Roles, Role{Name: r.Name, Members: r.Members, GPUsPerMember: r.GPUsPerMember, Tolerations: r.Tolerations})
	}
	return out
}

// clusterSelector is the stored selector: the whole one when stored, else
// the matchLabels an earlier hub stored (nil: every cluster).
func (g Gang) clusterSelector() *metav1.LabelSelector {
	if g.ClusterLabelSelector != nil {
		return g.ClusterLabelSelector
	}
	if g.ClusterSelector != nil {
		return &metav1.LabelSelector{MatchLabels: g.ClusterSelector}
	}
	return nil
}

// Placement is the placement engine's form of the stored gang.
func (g Gang) Placement() placement.Gang {
	var roles []placement.Role
	for _, r := range g.Roles {
		roles = append(roles, placement.Role{Name: r.Name, Members: r.Members, GPUsPerMember: r.GPUsPerMember, Tolerations: r.Tolerations})
	}
	return placement.Gang{Roles: roles,
		ID: g.ID, Queue: g.Queue, Priority: g.Priority, Preemptible: g.Preemptible, GracePeriod: g.GracePeriod,
		Members: g.Members, GPUsPerMember: g.GPUsPerMember, MIGResource: g.MIGResource, Shared: g.Shared, Products: g.Products,
		ClusterSelector: g.clusterSelector(), Clusters: g.Clusters, Pools: g.Pools, Tolerations: g.Tolerations,
		ComputeDomain: g.ComputeDomain,
		Topology: placement.Topology{Required: inventory.Level(g.Topology.Required),
			Preferred: inventory.Level(g.Topology.Preferred)},
		MaxClusters: g.MaxClusters, Policy: placement.Policy(g.Policy), Submitted: g.Submitted, Estimate: g.Estimate,
	}
}

// GPUs is the gang's total GPUs (or MIG slices), by placement's rule.
func (g Gang) GPUs() int {
	p := g.Placement()
	return p.GPUs()
}

// AssignmentsOf is the stored form of a placement's assignments.
func AssignmentsOf(as []placement.Assignment) []Assignment {
	if as == nil {
		return nil
	}
	out := make([]Assignment, len(as))
	for i, a := range as {
		out[i] = Assignment{Cluster: a.Cluster, Node: a.Node, Members: a.Members, Role: a.Role}
	}
	return out
}

// PlacementGang is the placement engine's form of the reservation's gang.
func (r *Reservation) PlacementGang() placement.Gang { return r.Gang.Placement() }

// PlacementAssignments is the placement engine's form of the reservation's
// assignments.
func (r *Reservation) PlacementAssignments() []placement.Assignment {
	if r.Assignments == nil {
		return nil
	}
	out := make([]placement.Assignment, len(r.Assignments))
	for i, a := range r.Assignments {
		out[i] = placement.Assignment{Cluster: a.Cluster, Node: a.Node, Members: a.Members, Role: a.Role}
	}
	return out
}
