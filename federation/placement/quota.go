// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Quota rules (Kueue's cohort semantics, on Shoal's queue tree). For each
// quota key k (a GPU class, or "" for all GPUs and slices) and each queue n
// on the path from a gang's queue to the root that has a quota for k, with
// U the GPUs n's subtree holds and w the gang's GPUs of k:
//
//  1. U + w <= nominal + borrowingLimit (no bound when the limit is nil);
//  2. if U + w > nominal, n borrows, and it borrows only idle nominal quota
//     of its cohort: the queues holding a quota for k whose nearest ancestor
//     with a quota for k is n's (the top-level ones when there is none).
//     Over the cohort, GPUs held plus w must stay within the nominal sum.
//
// A queue within its nominal quota is never refused for quota (only for
// capacity), even when others borrowed; taking borrowed GPUs back is
// reclaim (WithReclaim). A queue without a quota for k is not bounded for k
// itself, but its GPUs count in every ancestor's usage. A parent's quota
// bounds its whole subtree; its nominal is not lent to children that hold
// quotas of their own.

// usage is GPUs by quota key: every GPU class the GPUs count in, and "".
type usage map[string]int

// addUse adds g GPUs of a node of the given snapshot class, or slices of a MIG
// resource when mig is set, to u.
func (s *Snapshot) addUse(u usage, class int32, mig string, g int) {
	u[""] += g
	if mig != "" {
		if k, ok := v1alpha1.GPUClassOfResource(mig); ok {
			u[k] += g
		}
		return
	}
	for _, k := range s.classes[class].quotaKeys {
		u[k] += g
	}
}

// useOf returns the quota usage of a placement's picks.
func (s *Snapshot) useOf(g *Gang, picks []pick) usage {
	u := usage{}
	for k, pk := range picks {
		s.addUse(u, s.nodes[pk.node].class, g.sliceResource(), int(pk.members)*s.pickGPM(g, k))
	}
	return u
}

// allocUse returns the quota usage of a running gang. GPUs on nodes the
// snapshot does not know (their cluster is not Ready) still count: in ""
// and in the gang's MIG class, or the classes of its product when it
// accepts only one.
func (s *Snapshot) allocUse(al *allocation) usage {
	u := usage{}
	s.addAllocUse(u, al)
	return u
}

// addAllocUse adds a running gang's usage (see allocUse) to u.
func (s *Snapshot) addAllocUse(u usage, al *allocation) {
	for k, i := range al.nodes {
		s.addUse(u, s.nodes[i].class, al.mig, int(al.gpus[k]))
	}
	s.addOffUse(u, al)
}

// addOffUse adds the usage of a running gang's GPUs on nodes the snapshot
// does not know (see allocUse) to u.
func (s *Snapshot) addOffUse(u usage, al *allocation) {
	if g := al.offGPUs; g > 0 {
		u[""] += g
		switch mk, ok := v1alpha1.GPUClassOfResource(al.mig); {
		case ok:
			u[mk] += g
		case al.mig == "" && len(al.Gang.Products) == 1:
			for _, k := range v1alpha1.GPUClassesOfProduct(al.Gang.Products[0]) {
				u[k] += g
			}
		}
	}
}

// candidateUses returns, per GPU, the usages a gang could have if placed
// whole on one product of the fleet it accepts (one usage for a MIG gang),
// cached per cycle by MIG resource or product list: scale them by the
// gang's GPUs. Callers must not change them.
func (c *cycle) candidateUses(g *Gang) []usage {
	key := usesKeyOf(g)
	us, ok := c.uses[key]
	if !ok {
		us = c.s.candidateUses(g.sliceResource(), g.Products, c.qt.cap)
		c.uses[key] = us
	}
	return us
}

// usesKey is what candidateUses reads of a gang: its MIG (or share)
// resource, else its products (one is kept as is, several joined by NUL:
// no string is built for a gang of one product).
type usesKey struct {
	mig       string
	nProducts int
	products  string
}

// usesKeyOf returns the key candidateUses caches g's usages by.
func usesKeyOf(g *Gang) usesKey {
	key := usesKey{mig: g.sliceResource()}
	if key.mig == "" {
		key.nProducts = len(g.Products)
		switch len(g.Products) {
		case 0:
		case 1:
			key.products = g.Products[0]
		default:
			key.products = strings.Join(g.Products, "\x00")
		}
	}
	return key
}

// candidateUses computes what cycle.candidateUses caches: usages of one GPU.
func (s *Snapshot) candidateUses(mig string, products []string, capacity map[string]int) []usage {
	if mig != "" {
		u := usage{"": 1}
		if k, ok := v1alpha1.GPUClassOfResource(mig); ok {
			u[k] = 1
		}
		return []usage{u}
	}
	var out []usage
	for _, p := range slices.Sorted(maps.Keys(capacity)) {
		if len(products) > 0 && !slices.Contains(products, p) {
			continue
		}
		u := usage{"": 1}
		for _, k := range v1alpha1.GPUClassesOfProduct(p) {
			u[k] = 1
		}
		out = append(out, u)
	}
	return out
}

// admit returns why adding use (times scale) to queue would break a quota
// rule, or nil.
func (t *queueTree) admit(queue string, use usage, scale int) *Unschedulable {
	for n := t.get(queue); n != nil; n = n.parent {
		for _, k := range n.quotaKeys {
			w, ok := use[k]
			if !ok {
				continue
			}
			w *= scale
			q := n.quotas[k]
			after := n.held[k] + w
			if b := q.BorrowingLimit; b != nil && after > q.Nominal+*b {
				return quotaRefusal(n.name, k, after, q, "")
			}
			if after <= q.Nominal {
				continue
			}
			nominal, held := t.cohort(n, k)
			if held+w > nominal {
				idle := max(0, nominal-held-max(0, q.Nominal-n.held[k])) // not yet lent, beyond n's own
				return quotaRefusal(n.name, k, after, q, fmt.Sprintf("; its cohort has %d idle to lend", idle))
			}
		}
	}
	return nil
}

// admitAny returns nil when one of the usages (times scale) passes admit,
// else the first refusal.
func (t *queueTree) admitAny(queue string, uses []usage, scale int) *Unschedulable {
	var first *Unschedulable
	for _, u := range uses {
		why := t.admit(queue, u, scale)
		if why == nil {
			return nil
		}
		if first == nil {
			first = why
		}
	}
	return first
}

// quotaRefusal words a QuotaExceeded reason: "queue team would hold 24 h100
// GPUs, quota nominal 16 + borrowing 0".
func quotaRefusal(queue, key string, after int, q Quota, tail string) *Unschedulable {
	what := key + " GPUs"
	switch {
	case key == "":
		what = "GPUs"
	case strings.HasPrefix(key, v1alpha1.MIGClassPrefix):
		what = strings.TrimPrefix(key, v1alpha1.MIGClassPrefix) + " MIG slices"
	case key == v1alpha1.SharedClass:
		what = "GPU shares"
	}
	limit := "unlimited"
	if q.BorrowingLimit != nil {
		limit = strconv.Itoa(*q.BorrowingLimit)
	}
	return &Unschedulable{ReasonQuota, fmt.Sprintf("queue %s would hold %d %s, quota nominal %d + borrowing %s%s",
		queue, after, what, q.Nominal, limit, tail)}
}

// cohort returns the nominal sum and the GPUs held of key k over n's cohort.
func (t *queueTree) cohort(n *qnode, k string) (nominal, held int) {
	top := t.root
	for a := n.parent; a != nil; a = a.parent {
		if _, ok := a.quotas[k]; ok {
			top = a
			break
		}
	}
	var walk func(x *qnode)
	walk = func(x *qnode) {
		for _, ch := range x.children {
			if q, ok := ch.quotas[k]; ok {
				nominal += q.Nominal
				held += ch.held[k]
				continue
			}
			walk(ch)
		}
	}
	walk(top)
	return nominal, held
}

// QueueUsage is what a queue holds, its descendants included.
type QueueUsage struct {
	// GPUs maps each GPU class held (and "" for all GPUs and slices) to the
	// GPUs (or MIG slices) held.
	GPUs map[string]int
	// Borrowed maps each class the queue has a quota for to the GPUs held
	// beyond its nominal quota (only classes it borrows).
	Borrowed map[string]int
}

// QueueUsage returns the usage of every queue of the list and every queue a
// running gang names (with its ancestors), from the snapshot's allocations,
// placements booked by Schedule included. It charges the sums the
// snapshot keeps by queue, MIG resource and node class (sumRunning), not
// each running gang.
func (s *Snapshot) QueueUsage(queues []Queue) map[string]QueueUsage {
	t := newQueueTree(queues, nil)
	use := usage{}
	for _, al := range s.offAllocs {
		clear(use)
		s.addOffUse(use, al)
		t.charge(al.Gang.Queue, nil, use)
	}
	for k, g := range s.runSums {
		clear(use)
		s.addUse(use, k.class, k.mig, g)
		t.charge(k.queue, nil, use)
	}
	for q := range s.noGPUs {
		t.get(q) // a queue running only gangs without GPUs is listed too
	}
	out := make(map[string]QueueUsage, len(t.byKey))
	for name, n := range t.byKey {
		if name == "" {
			continue
		}
		u := QueueUsage{GPUs: map[string]int{}, Borrowed: map[string]int{}}
		for k, g := range n.held {
			if g > 0 {
				u.GPUs[k] = g
			}
		}
		for k, q := range n.quotas {
			if b := n.held[k] - q.Nominal; b > 0 {
				u.Borrowed[k] = b
			}
		}
		out[name] = u
	}
	return out
}

// surplus reports whether the queue or an ancestor borrows at least use
// beyond its nominal quota for some key, so that taking it back leaves it
// at or above nominal (reclaim never pushes a queue below its entitlement,
// which is what keeps reclaim from oscillating).
func (t *queueTree) surplus(queue string, use usage) bool {
	for n := t.get(queue); n != nil; n = n.parent {
		for k, g := range use {
			if q, ok := n.quotas[k]; ok && n.held[k]-g >= q.Nominal {
				return true
			}
		}
	}
	return false
}

// reclaims reports whether the queue or an ancestor opted into reclaim.
func (t *queueTree) reclaims(queue string) bool {
	for n := t.get(queue); n != nil; n = n.parent {
		if n.reclaim {
			return true
		}
	}
	return false
}

// withinNominal reports whether the queue and its ancestors hold no more
// than their nominal quotas after adding use times scale (true without quotas).
func (t *queueTree) withinNominal(queue string, use usage, scale int) bool {
	for n := t.get(queue); n != nil; n = n.parent {
		for k, g := range use {
			if q, ok := n.quotas[k]; ok && n.held[k]+g*scale > q.Nominal {
				return false
			}
		}
	}
	return true
}
