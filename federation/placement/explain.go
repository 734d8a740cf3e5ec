// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"strings"
)

// Reason classifies why a gang is not placed now.
type Reason string

// The reasons a gang waits.
const (
	// ReasonNoMatchingNodes: no schedulable node passes the gang's product,
	// cluster, MIG and toleration filters.
	ReasonNoMatchingNodes Reason = "NoMatchingNodes"
	// ReasonInsufficientGPUs: fewer GPUs are free than the gang needs.
	ReasonInsufficientGPUs Reason = "InsufficientGPUs"
	// ReasonFragmented: enough GPUs are free, but not enough on single nodes
	// to hold whole members.
	ReasonFragmented Reason = "Fragmented"
	// ReasonTopology: members fit in the fleet but not inside one domain of
	// the required level (or in MaxClusters clusters).
	ReasonTopology Reason = "Topology"
	// ReasonQuota: the gang's queue (or an ancestor) would exceed its quota.
	ReasonQuota Reason = "QuotaExceeded"
	// ReasonReserved: GPUs are held for a bigger gang ahead in line.
	ReasonReserved Reason = "Reserved"
	// ReasonPreempting: victims are being preempted to make room for the gang.
	ReasonPreempting Reason = "Preempting"
	// ReasonBlocked: a gang ahead in strict FIFO order blocks it (baselines).
	ReasonBlocked Reason = "Blocked"
)

// Unschedulable says why a gang is not placed, in words a user can act on.
type Unschedulable struct {
	// Reason is the machine-readable cause.
	Reason Reason
	// Message is the explanation, e.g. "needs 32×8 GPUs in one rack; the
	// largest free rack has 12×8 (eu1/rack:r7)".
	Message string
}

// Error implements error.
func (u *Unschedulable) Error() string { return string(u.Reason) + ": " + u.Message }

// explain builds the Unschedulable for a request that did not fit.
func (s *Snapshot) explain(r *request) *Unschedulable {
	unit := fmt.Sprintf("%d %s", r.gpm, r.g.unit())
	shape := fmt.Sprintf("%d×%d %s", r.need, r.gpm, r.g.unit())
	if r.g.Products != nil {
		shape += " of " + strings.Join(r.g.Products, "|")
	}
	filters := "products, clusters, MIG profile and tolerations"
	if r.shared {
		filters = "products, clusters, sharing strategy and tolerations"
	}
	if r.g.Devices != nil && len(r.g.Roles) == 0 {
		if st, ok := r.g.Devices.(fmt.Stringer); ok {
			shape += " (" + st.String() + ")"
		}
		filters = "device class and selectors, products, clusters and tolerations"
	}
	if r.g.ComputeDomain {
		shape += " with a compute domain"
		filters += ", and a free NVLink clique (one no other compute-domain job holds) in a cluster serving ComputeDomains"
	}
	var nodes, down, slots, free int32
	for c := range s.clusters {
		cr := s.clusters[c].ranges[lvCluster]
		if cr[0] == cr[1] {
			continue
		}
		if n, dn, k, f, ok := s.countedMatches(r, cr[0]); ok {
			nodes, down, slots, free = nodes+n, down+dn, slots+k, free+f
			continue
		}
		dom := &s.levels[lvCluster][cr[0]]
		for i := dom.lo; i < dom.hi; i++ {
			n := &s.nodes[i]
			if !r.classOK[n.class] {
				continue
			}
			if r.mig != "" && s.slice(i, r.mig) == nil {
				continue
			}
			nodes++
			if !n.schedulable {
				down++
				continue
			}
			slots += s.slots(r, i)
			if r.mig == "" {
				free += n.free
			} else if m := s.slice(i, r.mig); m != nil {
				free += m.free()
			}
		}
	}
	switch {
	case nodes == 0 || nodes == down:
		return &Unschedulable{ReasonNoMatchingNodes, fmt.Sprintf(
			"needs %s; no schedulable node matches its %s (%d match, %d cordoned or not ready)",
			shape, filters, nodes, down)}
	case free < r.need*r.gpm:
		return &Unschedulable{ReasonInsufficientGPUs, fmt.Sprintf(
			"needs %s; %d are free on matching nodes", shape, free)}
	case slots < r.need:
		return &Unschedulable{ReasonFragmented, fmt.Sprintf(
			"needs %s; %d are free on matching nodes but only %d members of %s fit on single nodes",
			shape, free, slots, unit)}
	}
	return s.explainTopology(r, shape)
}

// explainTopology names the largest domain at the ceiling level.
func (s *Snapshot) explainTopology(r *request, shape string) *Unschedulable {
	if r.ceil == lvFleet {
		return &Unschedulable{ReasonTopology, fmt.Sprintf(
			"needs %s in at most %d clusters; the largest %d clusters do not hold it", shape, r.maxClusters, r.maxClusters)}
	}
	best, bestName := int32(0), ""
	for d := range s.levels[r.ceil] {
		if !r.clusterOK[s.levels[r.ceil][d].cluster] {
			continue
		}
		k, _ := s.domainSlots(r, r.ceil, d, 0)
		if k > best {
			best, bestName = k, s.levels[r.ceil][d].name
		}
	}
	lvl := string(levelNames[r.ceil])
	if best == 0 {
		return &Unschedulable{ReasonTopology, fmt.Sprintf("needs %s in one %s; no %s has room for a member", shape, lvl, lvl)}
	}
	return &Unschedulable{ReasonTopology, fmt.Sprintf(
		"needs %s in one %s; the largest free %s has %d×%d (%s)", shape, lvl, lvl, best, r.gpm, bestName)}
}

// Explain says where and why a placement put gang g, for job status: e.g.
// "32×8 GPUs on 32 nodes in one rack (eu1/rack:r07); preferred nvlink: no
// NVLink domain had room; required rack kept". It is computed on demand so
// that decisions stay cheap.
func (p Placement) Explain(g Gang) string {
	shape := g.Shape()
	if len(p.Clusters) > 1 {
		return fmt.Sprintf("%s on %d nodes over %d clusters (%s): no single cluster had room; the fewest clusters are used",
			shape, len(p.Assignments), len(p.Clusters), strings.Join(p.Clusters, ", "))
	}
	msg := fmt.Sprintf("%s on %d nodes in one %s (%s)", shape, len(p.Assignments), p.Level, p.Domain)
	if pref := g.Topology.Preferred; pref != "" {
		if p.Level.Rank() > pref.Rank() {
			msg += fmt.Sprintf("; preferred %s: no %s domain had room", pref, pref)
		} else {
			msg += fmt.Sprintf("; preferred %s met", pref)
		}
	}
	if req := g.Topology.Required; req != "" {
		msg += fmt.Sprintf("; required %s kept", req)
	}
	return msg
}
