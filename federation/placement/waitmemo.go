// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"math"
	"strings"
	"sync/atomic"
	"unique"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// Equivalence classes of waiting gangs. Of 100,000 pending gangs most
// wait, and once the fleet is full they wait in a few dozen shapes: a cycle
// remembers, per class, that a gang did not fit and why, and a later gang
// of the class reuses it while nothing a placement reads has changed.
//
// A class is what newRequest, place and explain read of a gang: members,
// GPUs (or slices, shares and their sharing strategy) per member, products,
// required level, cluster count and policy, and which reservations' held
// nodes it may use (it is their holder, or would end before they are due:
// slots and mayUseHeld compare nothing else of its estimate). Gangs with
// roles, DRA devices, cluster selectors or lists, pools or tolerations, and
// gangs holding a reservation, are not classed: they are decided in full.
//
// The condition is exact: Snapshot.version counts every change to free
// GPUs and slices, schedulable flags and reservation marks and times, and
// the cycle's placement options do not change, so at the same version the
// same request fails the same way with the same explanation. A change that
// is undone (a preemption search releases and rebooks its candidates)
// still ends the class's answer; that costs one decision, never a
// different one. TestWaitMemoEquivalence compares cycles with and without.

// memoWaits turns the classes on, and the sharing of filters
// (cycle.request); tests turn them off to compare.
var memoWaits = true

// memoHits counts the gangs a class answered for (tests).
var memoHits atomic.Int64

// filterKeyT is what resolveFilters reads of a gang whose only filters
// are products and sharing (filterKey): gangs with the same share their
// cluster and class filters within a cycle (cycle.request).
type filterKeyT struct {
	shared    bool
	strategy  string // Shared.Strategy
	nProducts int    // -1: Products is nil (explain tells nil from empty)
	products  string // Products joined by NUL
}

// filterKey returns g's filterKeyT, or false when g has other filters:
// roles, DRA devices, cluster selectors or lists, pools, tolerations or a
// compute domain (whose class filter, the free cliques, changes within a
// cycle as compute-domain gangs are placed).
func filterKey(g *Gang) (filterKeyT, bool) {
	if len(g.Roles) > 0 || !classable(g) {
		return filterKeyT{}, false
	}
	return filterKeyOf(g), true
}

// filterKeyOf is g's products and sharing as a filterKeyT, whatever its
// other filters.
func filterKeyOf(g *Gang) filterKeyT {
	k := filterKeyT{shared: g.Shared != nil, nProducts: len(g.Products), products: strings.Join(g.Products, "\x00")}
	if g.Shared != nil {
		k.strategy = g.Shared.Strategy
	}
	if g.Products == nil {
		k.nProducts = -1
	}
	return k
}

// sameFilterKey says whether g's products and sharing are still k
// (filterKeyOf), comparing instead of joining.
func sameFilterKey(g *Gang, k *filterKeyT) bool {
	n := len(g.Products)
	if g.Products == nil {
		n = -1
	}
	return (g.Shared != nil) == k.shared && (g.Shared == nil || g.Shared.Strategy == k.strategy) &&
		n == k.nProducts && joinedIs(g.Products, k.products)
}

// filters are a request's resolved filters, shared by the gangs of a
// filterKeyT; no one changes them.
type filters struct {
	clusterOK, classOK []bool
	fit                []int8
}

// waitKey is a waiting gang's class.
type waitKey struct {
	filterKeyT
	gpm, need   int32
	mig         string // sliceResource
	required    inventory.Level
	maxClusters int
	policy      Policy
}

// failMemo is a class's answer: at snapshot version, a gang of the class
// did not fit, for why.
type failMemo struct {
	version uint64
	why     *Unschedulable // shared by the class's waits: read only
}

// failKey is a waiting gang's class in a cycle: its class's wait key
// (classMemo) and which reservations' held nodes it may use.
type failKey struct {
	wait   unique.Handle[waitKey]
	mayUse uint64 // bit h: may use the nodes held by reservation h
}

// waitKey returns g's class (cls: its classMemo, nil for a gang with
// roles), or false when g is decided in full.
func (c *cycle) waitKey(g *Gang, hasRes bool, cls *classMemo) (failKey, bool) {
	if !memoWaits || hasRes || len(c.s.holdStart) > 64 || cls == nil || !cls.classed {
		return failKey{}, false
	}
	k := failKey{wait: cls.wait}
	endsAt := int64(math.MaxInt64) // as request sets it
	if g.Estimate > 0 {
		endsAt = c.in.Now.Add(g.Estimate).UnixNano()
	}
	for h, start := range c.s.holdStart {
		if endsAt <= start {
			k.mayUse |= 1 << h
		}
	}
	return k, true
}
