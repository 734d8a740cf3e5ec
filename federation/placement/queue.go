// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Quota bounds the GPUs a queue (with its descendants) may hold of one GPU
// class; see quota.go for the rules.
type Quota struct {
	// Nominal is the GPUs the queue is entitled to.
	Nominal int
	// BorrowingLimit is how many GPUs beyond Nominal it may borrow from the
	// idle nominal quota of the queues it shares a cohort with; nil means no
	// limit, 0 forbids borrowing.
	BorrowingLimit *int
}

// Queue is one node of the queue tree. Paths use "/" ("research/nlp").
type Queue struct {
	// Name is the queue's full path; its parent is the path without the last element.
	Name string
	// Weight is the queue's fair-share weight among its siblings (0 means 1).
	Weight float64
	// Quotas maps a GPU class (v1alpha1.GPUClasses: "h100", "a100-80gb",
	// "mig-1g.10gb") to the queue's quota; the key "" bounds all GPUs and
	// slices together.
	Quotas map[string]Quota
	// Reclaim lets gangs of this queue and its descendants reclaim
	// borrowed quota (WithReclaim turns it on for every queue).
	Reclaim bool
}

// parentOf returns the parent path of a queue path ("" at the top).
func parentOf(q string) string {
	if i := strings.LastIndexByte(q, '/'); i >= 0 {
		return q[:i]
	}
	return ""
}

// qnode is a queue in the scheduling cycle's tree.
type qnode struct {
	name      string
	weight    float64
	quotas    map[string]Quota
	quotaKeys []string // keys of quotas, sorted
	reclaim   bool
	parent    *qnode
	children  []*qnode
	alloc     map[string]int // GPUs held, by product (fair share)
	held      usage          // GPUs held, by quota key (quota.go)
	usage     float64        // decayed past usage, GPUs
	pending   []*Gang        // leaf: gangs waiting, in FIFO order
	next      int            // leaf: index of the next pending gang
	active    int            // pending gangs left in this subtree
	banded    int            // leaf: gangs of the band being queued (queueBand)
	share     float64        // queueTree.share's answer while shareOK
	shareOK   bool           // cleared whenever alloc or usage changes
}

// queueTree builds the tree from the queue list, adding any queue a gang
// or allocation names but the list does not (weight 1, no quota).
type queueTree struct {
	root  *qnode
	byKey map[string]*qnode
	cap   map[string]int // fleet GPUs by product
	total int
	// version counts the changes to what admit reads (GPUs held, queues
	// added), so that a cycle may reuse an answer while it stays the same.
	version uint64
}

func newQueueTree(queues []Queue, capacity map[string]int) *queueTree {
	t := &queueTree{root: &qnode{weight: 1, alloc: map[string]int{}, held: usage{}}, byKey: map[string]*qnode{}, cap: capacity}
	t.byKey[""] = t.root
	for _, c := range capacity {
		t.total += c
	}
	qs := append([]Queue(nil), queues...)
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	for _, q := range qs {
		n := t.get(q.Name)
		if q.Weight > 0 {
			n.weight = q.Weight
		}
		n.quotas, n.quotaKeys, n.reclaim = q.Quotas, slices.Sorted(maps.Keys(q.Quotas)), q.Reclaim
	}
	return t
}

// get returns the queue at path, creating it (and its parents) if needed.
func (t *queueTree) get(path string) *qnode {
	if n, ok := t.byKey[path]; ok {
		return n
	}
	p := t.get(parentOf(path))
	n := &qnode{name: path, weight: 1, parent: p, alloc: map[string]int{}, held: usage{}}
	t.version++
	p.children = append(p.children, n)
	sort.Slice(p.children, func(i, j int) bool { return p.children[i].name < p.children[j].name })
	t.byKey[path] = n
	return n
}

// charge adds held GPUs up the tree, by product and by quota key.
func (t *queueTree) charge(queue string, byProduct map[string]int, use usage) {
	t.version++
	for n := t.get(queue); n != nil; n = n.parent {
		n.shareOK = false
		for p, g := range byProduct {
			n.alloc[p] += g
		}
		for k, g := range use {
			n.held[k] += g
		}
	}
}

// share is the queue's weighted dominant share: the largest fraction of any
// product's capacity it holds, plus its decayed past usage over the fleet,
// divided by its weight.
func (t *queueTree) share(n *qnode) float64 {
	if !n.shareOK {
		n.share, n.shareOK = t.computeShare(n), true
	}
	return n.share
}

// computeShare computes share from the queue's alloc and usage (the
// weight, capacity and total do not change within a cycle).
func (t *queueTree) computeShare(n *qnode) float64 {
	dom := 0.0
	for p, g := range n.alloc {
		if c := t.cap[p]; c > 0 {
			dom = math.Max(dom, float64(g)/float64(c))
		}
	}
	if t.total > 0 {
		dom += n.usage / float64(t.total)
	}
	return dom / n.weight
}

// FairShare keeps each queue's usage as an exponentially decaying average
// of the GPUs it held, so a queue that ran a lot recently yields to others.
type FairShare struct {
	// HalfLife is how long it takes past usage to count half as much.
	HalfLife time.Duration
	usage    map[string]float64
	last     time.Time
}

// NewFairShare returns a tracker with the given half-life.
func NewFairShare(halfLife time.Duration) *FairShare {
	return &FairShare{HalfLife: halfLife, usage: map[string]float64{}}
}

// Advance decays usage to now and blends in the GPUs each leaf queue held
// since the last call.
func (f *FairShare) Advance(now time.Time, held map[string]int) {
	if f.last.IsZero() || f.HalfLife <= 0 {
		f.last = now
		return
	}
	dt := now.Sub(f.last)
	if dt <= 0 {
		return
	}
	f.last = now
	keep := math.Exp2(-float64(dt) / float64(f.HalfLife))
	for q := range f.usage {
		f.usage[q] *= keep
	}
	for q, g := range held {
		f.usage[q] += float64(g) * (1 - keep)
	}
}

// Usage returns the decayed usage of every leaf queue, for Input.Usage.
func (f *FairShare) Usage() map[string]float64 {
	out := make(map[string]float64, len(f.usage))
	for q, u := range f.usage {
		out[q] = u
	}
	return out
}

// FairShareState is a FairShare tracker's state: what a new scheduler
// leader restores to continue the decay where the last one stopped.
type FairShareState struct {
	// Usage is the decayed usage of each leaf queue, GPUs.
	Usage map[string]float64 `json:"usage,omitempty"`
	// Last is when usage was last advanced.
	Last time.Time `json:"last,omitempty"`
}

// State returns a copy of the tracker's state.
func (f *FairShare) State() FairShareState {
	return FairShareState{Usage: f.Usage(), Last: f.last}
}

// Restore replaces the tracker's state with a copy of st.
func (f *FairShare) Restore(st FairShareState) {
	f.usage = make(map[string]float64, len(st.Usage))
	for q, u := range st.Usage {
		f.usage[q] = u
	}
	f.last = st.Last
}
