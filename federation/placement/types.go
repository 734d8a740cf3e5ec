// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"strings"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// Policy says how members spread over the domain chosen for a gang.
type Policy string

const (
	// BinPack fills the fullest domains that fit, keeping big domains whole.
	BinPack Policy = "BinPack"
	// Spread picks the emptiest domain of the ceiling level (the required
	// level, else the cluster) and deals members round-robin over its
	// children down to nodes, for gangs that want failure isolation.
	Spread Policy = "Spread"
)

// Priority levels of the built-in priority classes.
const (
	PrioritySystemCritical int32 = 1000000
	PriorityProduction     int32 = 10000
	PriorityTraining       int32 = 5000
	PriorityBatch          int32 = 1000
	PriorityDevelopment    int32 = 100
)

// PriorityClasses maps the built-in priority class names to their values.
var PriorityClasses = map[string]int32{
	"system-critical": PrioritySystemCritical,
	"production":      PriorityProduction,
	"training":        PriorityTraining,
	"batch":           PriorityBatch,
	"development":     PriorityDevelopment,
}

// Topology is a gang's topology rule.
type Topology struct {
	// Required is the loosest level allowed: every member lies in one domain
	// of this level. Empty means cluster (or several clusters with MaxClusters > 1).
	Required inventory.Level
	// Preferred is the level the gang would like; the engine always tries the
	// tightest level first and falls back upward to Required. It is reported
	// back so users can see whether their preference was met.
	Preferred inventory.Level
}

// Role is one kind of member of a gang whose members differ.
type Role struct {
	// Name is the role's name; assignments carry it.
	Name string
	// Members is the role's member count.
	Members int
	// GPUsPerMember is the GPUs (or MIG slices with the gang's MIGResource)
	// each member of the role needs; 0 makes a CPU-only role, whose members
	// are not put on nodes but go to the cluster of the gang's first GPU
	// member (an assignment with an empty Node).
	GPUsPerMember int
	// Tolerations let the role's members land on tainted nodes.
	Tolerations []corev1.Toleration
}

// Gang is one job to place: Members pods of GPUsPerMember GPUs each, or the
// members of its Roles, all or none.
type Gang struct {
	// ID identifies the gang (the job's key).
	ID string
	// Queue is the leaf queue path, e.g. "research/nlp/llama".
	Queue string
	// Priority is the priority class value; higher goes first.
	Priority int32
	// Preemptible says whether other gangs may preempt this one.
	Preemptible bool
	// GracePeriod is the time a victim gets to checkpoint before it is stopped.
	GracePeriod time.Duration
	// Members is the number of member pods (with Roles, the sum over them).
	Members int
	// GPUsPerMember is the GPUs (or MIG slices with MIGResource) each member
	// needs; unused with Roles.
	GPUsPerMember int
	// Roles, when set, are the kinds of member of a gang whose members
	// differ, in member order. Every GPU role asks for MIGResource (or whole
	// GPUs); Tolerations are unused, each role has its own.
	Roles []Role
	// MIGResource, when set (nvidia.com/mig-1g.10gb), makes members ask for MIG slices.
	MIGResource string
	// Shared, when set, makes members ask for shares of time-sliced or MPS
	// GPUs (nvidia.com/gpu.shared); GPUsPerMember then counts shares. Not
	// with MIGResource.
	Shared *SharedRequest
	// Products lists the GPU products the gang accepts; empty accepts any.
	Products []string
	// Devices, when set, makes the members' GPUs DRA devices: only nodes
	// whose DRA GPUs it matches are candidates (federation/devicesel; a
	// node without DRA GPUs never is). Unused with Roles.
	Devices DeviceMatcher
	// ComputeDomain makes the gang one that gets an NVIDIA ComputeDomain
	// per NVLink clique it uses: only nodes with a clique in clusters that
	// serve ComputeDomains are candidates, and only in cliques where no
	// other compute-domain gang holds nodes (computedomain.go).
	ComputeDomain bool
	// ClusterSelector must match the cluster's labels: matchLabels and
	// matchExpressions (In, NotIn, Exists, DoesNotExist) alike, with
	// Kubernetes semantics; nil selects every cluster. An invalid selector
	// makes the gang an ErrInvalidGang.
	ClusterSelector *metav1.LabelSelector
	// Clusters, when set, lists the clusters the gang may use.
	Clusters []string
	// Pools, when set, are the GPU pools of the gang's queue: only nodes in
	// one of them are candidates (docs/pools.md).
	Pools []PoolFilter
	// Tolerations let members land on tainted nodes.
	Tolerations []corev1.Toleration
	// Topology is the gang's topology rule.
	Topology Topology
	// MaxClusters bounds how many clusters the gang may span (0 means 1).
	MaxClusters int
	// Policy is BinPack (default) or Spread.
	Policy Policy
	// Submitted is when the gang was submitted (FIFO tie-break).
	Submitted time.Time
	// Estimate is how long the gang expects to run (a time limit; 0 when
	// unknown). With it the gang may backfill onto nodes held for a bigger
	// gang if it ends before they are needed, and reservations can tell when
	// nodes will drain.
	Estimate time.Duration
	// Ref is the caller's own handle for the gang (an index into its own
	// table of the pending jobs, say): the engine does not read it and
	// returns it in the gang's Placement and Wait, so the caller finds its
	// record without a lookup by ID.
	Ref int `json:"-"`

	// class is the engine's memo of the gang's class (classmemo.go): set
	// by the first cycle that decides the gang, reused while the gang has
	// the fields it was made from. Copies made for allocations drop it.
	class unique.Handle[classMemo]
}

// PoolFilter is one GPU pool as placement filters nodes by it: a node is
// in it when its cluster is in Clusters, and its product in Products and
// its node pool in NodePools (each empty: any).
type PoolFilter struct {
	Clusters, Products, NodePools []string
}

// SharedRequest is what a gang asks of shared GPUs besides its shares.
type SharedRequest struct {
	// Strategy is the sharing the members need (inventory.SharingTimeSlicing
	// or SharingMPS); empty accepts either.
	Strategy string
}

// Resource returns the extended resource each member asks for:
// nvidia.com/gpu, the MIG resource, or nvidia.com/gpu.shared.
func (g *Gang) Resource() string {
	if r := g.sliceResource(); r != "" {
		return r
	}
	return inventory.ResourceGPU
}

// sliceResource is the resource a gang counts in slices or shares instead
// of whole GPUs ("" for whole GPUs): its MIG resource, or
// nvidia.com/gpu.shared.
func (g *Gang) sliceResource() string {
	if g.Shared != nil {
		return inventory.ResourceGPUShared
	}
	return g.MIGResource
}

// DeviceMatcher tells whether a node's DRA GPUs serve a gang's device
// request (federation/devicesel Request).
type DeviceMatcher interface {
	Matches(*inventory.DRADevices) bool
}

// GPUs returns the gang's total GPUs (or MIG slices).
func (g *Gang) GPUs() int {
	if len(g.Roles) == 0 {
		return g.Members * g.GPUsPerMember
	}
	return g.roleGPUs()
}

// roleGPUs is GPUs for a gang with roles (apart, so that GPUs inlines).
func (g *Gang) roleGPUs() int {
	n := 0
	for _, r := range g.Roles {
		n += r.Members * r.GPUsPerMember
	}
	return n
}

// gpmOf is the GPUs per member of the named role (of every member without roles).
func (g *Gang) gpmOf(role string) int {
	if len(g.Roles) == 0 {
		return g.GPUsPerMember
	}
	for _, r := range g.Roles {
		if r.Name == role {
			return r.GPUsPerMember
		}
	}
	return 0
}

// Shape describes the gang's request, e.g. "4×8 GPUs" or
// "launcher 1×0 + worker 4×8 GPUs".
func (g *Gang) Shape() string {
	if len(g.Roles) == 0 {
		return fmt.Sprintf("%d×%d %s", g.Members, g.GPUsPerMember, g.unit())
	}
	parts := make([]string, len(g.Roles))
	for i, r := range g.Roles {
		parts[i] = fmt.Sprintf("%s %d×%d", r.Name, r.Members, r.GPUsPerMember)
	}
	return strings.Join(parts, " + ") + " " + g.unit()
}

// unit names what GPUsPerMember counts: "GPUs", "mig-1g.10gb slices" or
// "GPU shares".
func (g *Gang) unit() string {
	switch {
	case g.Shared != nil:
		return "GPU shares"
	case g.MIGResource != "":
		return strings.TrimPrefix(g.MIGResource, "nvidia.com/") + " slices"
	}
	return "GPUs"
}

// Assignment puts Members members of a gang on one node.
type Assignment struct {
	// Cluster and Node name the node.
	Cluster string
	Node    string
	// Members is how many of the gang's members run on the node.
	Members int
	// Role is the role of those members (empty for a gang without roles).
	// The members of a CPU-only role get one assignment with an empty Node.
	Role string `json:",omitempty"`
}

// Placement is where a whole gang goes.
type Placement struct {
	// Gang is the gang's ID.
	Gang string
	// Ref is the gang's Gang.Ref.
	Ref int `json:"-"`
	// Assignments list the nodes, sorted by cluster and node (then role);
	// the assignments of CPU-only roles, with no node, come last.
	Assignments []Assignment
	// Level is the tightest level whose one domain holds the whole gang
	// ("" when it spans clusters).
	Level inventory.Level
	// Domain names that domain, as "<cluster>/<level>:<name>".
	Domain string
	// Clusters lists the clusters used, fewest possible.
	Clusters []string
	// Quality, filled only under WithQuality, scores the placement.
	Quality *Quality `json:",omitempty"`
}

// Quality compares the NVLink domains and racks a placement uses with the
// fewest that could have held the gang at decision time.
type Quality struct {
	NVLinkDomains, MinNVLinkDomains int
	Racks, MinRacks                 int
}

// Allocation is a gang that holds GPUs: running, or reserved and being started.
type Allocation struct {
	// Gang is the running gang.
	Gang Gang
	// Assignments are its nodes.
	Assignments []Assignment
	// Started is when it started running; zero when it has not started
	// yet (booked, its members being started): it then counts as starting
	// at the cycle's time (Input.Now), so its time limit (Estimate) ends
	// no earlier than that plus the limit and it has lost no work if it is
	// preempted. (A caller need not set the time of every gang not started
	// each cycle.)
	Started time.Time
	// LastCheckpoint, if set, is the last time it saved its work.
	LastCheckpoint time.Time
	// CheckpointInterval, if set, is how often it saves its work (the time
	// between its last two checkpoints): a preemption whose grace covers the
	// next one costs no work, since the victim stops once it reports it.
	CheckpointInterval time.Duration
	// Counted says the inventory's UsedGPUs already include this gang's pods,
	// so the snapshot must not subtract its GPUs again.
	Counted bool

	// kept is what a Builder booked of this Allocation (nil: nothing),
	// so that the next build finds it without a lookup by name.
	kept *kept
}

// startedBy is when the gang started, or now when it has not (Started).
func (a *Allocation) startedBy(now time.Time) time.Time {
	if a.Started.IsZero() {
		return now
	}
	return a.Started
}
