// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// Input is what one scheduling cycle decides on, besides the snapshot.
type Input struct {
	// Now is the cycle's time; placements start at Now.
	Now time.Time
	// Pending are the gangs waiting to be placed.
	Pending []Gang
	// PendingRefs, when not nil, are the gangs waiting to be placed by
	// reference, in place of Pending (not read then): a caller that keeps
	// its pending gangs from cycle to cycle hands them over without
	// copying each (35,000 gangs of 336 bytes a cycle on the F-XL load
	// run). Schedule does not change them.
	PendingRefs []*Gang
	// Queues is the queue tree with weights and quotas.
	Queues []Queue
	// Usage is the decayed past usage of each leaf queue in GPUs (FairShare.Usage).
	Usage map[string]float64
	// Reservations are the previous decision's reservations; a gang keeps its
	// domain while it still waits.
	Reservations []Reservation
	// Terminating maps a running gang being preempted to its preemptor.
	Terminating map[string]string
	// WaitBuffer, when it has room for every pending gang, is the array
	// the decision's Waiting is written into (a caller that decides every
	// cycle passes its last decision's Waiting, which it no longer reads,
	// instead of a new array of 35,000 waits a cycle).
	WaitBuffer []Wait
}

// Reservation holds nodes for a gang that waits at the head of its queue
// (or for its preemption victims to leave): no other gang may use them, so
// they drain towards it while others backfill on the rest of the fleet.
type Reservation struct {
	// Gang is the holder.
	Gang string
	// Level and Domain name the domain the held nodes lie in.
	Level  inventory.Level
	Domain string
	// Nodes are the held nodes as "cluster/node": enough, once empty, for
	// every member, chosen among those with the most free GPUs.
	Nodes []string
}

// Preemption asks to stop a running gang so that another can run.
type Preemption struct {
	// Victim is the gang to stop, whole.
	Victim string
	// Preemptor is the gang it makes room for.
	Preemptor string
	// Grace is the time the victim gets to checkpoint.
	Grace time.Duration
	// GPUHoursLost estimates the work lost since the victim's last checkpoint.
	GPUHoursLost float64
	// Reason explains why this victim was chosen.
	Reason string
}

// Wait is a gang left pending, with why.
type Wait struct {
	// Gang is the gang's ID.
	Gang string
	// Ref is the gang's Gang.Ref.
	Ref int `json:"-"`
	// Why explains it. The waits of gangs a cycle found equal (a class:
	// waitmemo.go) share one: read only.
	Why *Unschedulable
}

// Decision is the outcome of one scheduling cycle.
type Decision struct {
	// Placements are the gangs to start, already booked in the snapshot.
	Placements []Placement
	// Preemptions are the gangs to stop.
	Preemptions []Preemption
	// Reservations are the domains held, to pass to the next cycle.
	Reservations []Reservation
	// Waiting are the gangs not placed, with reasons.
	Waiting []Wait
}

// Order is how a cycle orders pending gangs.
type Order int

const (
	// OrderFairShare orders by priority, then hierarchical weighted fair share, then age.
	OrderFairShare Order = iota
	// OrderFIFO orders by submission time alone (baselines).
	OrderFIFO
)

type config struct {
	order              Order
	strict             bool
	maxReservations    int
	reservationMinGPUs int
	maxHeldFraction    float64
	preemption         bool
	maxPreemptors      int
	preemptAfter       time.Duration
	lossPerWait        float64
	lossBudgetWait     time.Duration
	reclaim            bool
	place              params
	quality            bool
	terse              bool
}

// Option configures Schedule.
type Option func(*config)

// WithOrder sets the order of pending gangs.
func WithOrder(o Order) Option { return func(c *config) { c.order = o } }

// WithStrictOrder stops the cycle at the first gang that does not fit
// (no backfill), as plain FIFO schedulers do.
func WithStrictOrder() Option { return func(c *config) { c.strict = true } }

// WithReservations sets how many head-of-queue reservations a cycle may hold
// (0 turns them off), the smallest gang that gets one (0: one node's GPUs)
// and the largest fraction of the fleet's GPUs they may cover together.
func WithReservations(n, minGPUs int, maxFraction float64) Option {
	return func(c *config) { c.maxReservations, c.reservationMinGPUs, c.maxHeldFraction = n, minGPUs, maxFraction }
}

// WithPreemption turns preemption on or off and bounds how many gangs may
// start preempting in one cycle.
func WithPreemption(on bool, maxPreemptors int) Option {
	return func(c *config) { c.preemption, c.maxPreemptors = on, maxPreemptors }
}

// WithPreemptAfter sets how long a gang waits before it may preempt, and
// the expected drain time below which it keeps waiting instead (default 30
// minutes: young gangs usually find room as others end). Beyond it, a gang
// preempts only when the GPU-hours its victims lose are fewer than its own
// GPUs would idle while it waited.
func WithPreemptAfter(d time.Duration) Option { return func(c *config) { c.preemptAfter = d } }

// WithPreemptionLossBudget bounds what a preemptor below production
// priority may cost: at most f GPU-hours of its victims' lost work (counted
// from their last checkpoints, nothing for a victim whose next checkpoint
// falls within its grace) per GPU-hour it has waited beyond the
// preempt-after time (default 0.1), for at most maxWait of waiting beyond
// it (default 4 hours, a few usual checkpoint intervals; 0 keeps the
// default).
// Such a gang first takes only victims about to checkpoint and accepts
// costlier ones as its wait grows; after maxWait the budget ends (victims
// that never checkpoint lose work faster than it grows). Production gangs,
// and gangs of queues that reclaim their quota, are not bounded by it. A
// negative f turns it off.
func WithPreemptionLossBudget(f float64, maxWait time.Duration) Option {
	return func(c *config) {
		c.lossPerWait = f
		if maxWait > 0 {
			c.lossBudgetWait = maxWait
		}
	}
}

// WithReclaim lets a gang whose queue (and its ancestors) stays within its
// nominal quota preempt same- or lower-priority gangs of queues borrowing
// beyond theirs, but only the surplus: a queue is never pushed below its
// nominal quota. Off by default (like Kueue's reclaimWithinCohort: Never):
// in simulation it trades a lot of lost work for quota fidelity.
// Queue.Reclaim turns it on for one queue and its descendants.
func WithReclaim() Option { return func(c *config) { c.reclaim = true } }

// WithPlaceOptions passes placement options (baselines) to every decision.
func WithPlaceOptions(opts ...PlaceOption) Option {
	return func(c *config) {
		for _, o := range opts {
			o(&c.place)
		}
	}
}

// WithQuality fills Placement.Quality (costs about one more decision per gang).
func WithQuality() Option { return func(c *config) { c.quality = true } }

// WithoutExplanations skips the per-gang explanation of waiting gangs
// (their Why carries the reason only); simulations use it for speed.
func WithoutExplanations() Option { return func(c *config) { c.terse = true } }

func defaults() config {
	return config{maxReservations: 4, maxHeldFraction: 0.25, preemption: true, maxPreemptors: 4,
		preemptAfter: 30 * time.Minute, lossPerWait: 0.1, lossBudgetWait: 4 * time.Hour}
}

// gpusByProduct returns the GPUs a placement of a gang without roles
// takes, by product (small enough to inline, so the map stays on the stack).
func (s *Snapshot) gpusByProduct(g *Gang, picks []pick) map[string]int {
	out := map[string]int{}
	for _, pk := range picks {
		c := &s.classes[s.nodes[pk.node].class]
		out[c.product] += int(pk.members) * g.GPUsPerMember
	}
	return out
}

// capacityByProduct returns the fleet's allocatable GPUs by product (a
// copy of the layout's count).
func (s *Snapshot) capacityByProduct() map[string]int {
	return maps.Clone(s.productGPUs)
}

// sortPending orders gangs by priority (not in FIFO), submission time, ID
// (then input order, as a stable sort keeps it). It sorts compact keys
// instead of the gangs: submission times as (Unix seconds, nanoseconds),
// which order them as Time.Compare does unless two carry monotonic clock
// readings (then it compares the gangs themselves).
//
// Gangs given in that order already (a caller that keeps its pending
// gangs ordered: hub/scheduler's index, ComparePending) are checked in one
// pass and not sorted: at 35,000 pending gangs, most submitted within the
// same second as a thousand others, the sort compared IDs a million times
// each cycle.
func sortPending(gs []*Gang, o Order, buf *[]*Gang) []*Gang {
	if cap(*buf) < len(gs) {
		*buf = make([]*Gang, len(gs))
	}
	out := (*buf)[:len(gs)]
	copy(out, gs)
	if slices.IsSortedFunc(out, func(a, b *Gang) int { return comparePending(a, b, o) }) {
		return out
	}
	monotonic := 0
	for _, g := range gs {
		if g.Submitted != g.Submitted.Round(0) {
			monotonic++
		}
	}
	if monotonic > 1 {
		slices.SortStableFunc(out, func(a, b *Gang) int { return comparePending(a, b, o) })
		return out
	}
	// Keys of 128 bits ordering as (priority descending, seconds,
	// nanoseconds): hi holds the flipped priority and the high half of the
	// seconds (sign bit flipped), lo the low half and the nanoseconds.
	type key struct {
		hi, lo uint64
		at     int32
	}
	keys := make([]key, len(gs))
	for i, g := range gs {
		prio := uint32(0)
		if o != OrderFIFO {
			prio = ^(uint32(g.Priority) ^ 1<<31) // descending
		}
		sec := uint64(g.Submitted.Unix()) ^ 1<<63
		keys[i] = key{hi: uint64(prio)<<32 | sec>>32, lo: sec<<32 | uint64(g.Submitted.Nanosecond()), at: int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.hi != b.hi {
			return cmp.Compare(a.hi, b.hi)
		}
		if a.lo != b.lo {
			return cmp.Compare(a.lo, b.lo)
		}
		if c := strings.Compare(gs[a.at].ID, gs[b.at].ID); c != 0 {
			return c
		}
		return cmp.Compare(a.at, b.at)
	})
	for i, k := range keys {
		out[i] = gs[k.at]
	}
	return out
}

// pendingRefs is in's pending gangs by reference: its PendingRefs, or
// pointers into its Pending, in buf.
func pendingRefs(in *Input, buf *[]*Gang) []*Gang {
	if in.PendingRefs != nil {
		return in.PendingRefs
	}
	if cap(*buf) < len(in.Pending) {
		*buf = make([]*Gang, len(in.Pending))
	}
	out := (*buf)[:len(in.Pending)]
	for i := range in.Pending {
		out[i] = &in.Pending[i]
	}
	return out
}

// ComparePending is the order in which Schedule decides pending gangs in
// its default order (OrderFairShare) before fair sharing interleaves the
// queues: priority (highest first), then submission time, then ID. A
// caller that hands Schedule its pending gangs in this order spares it
// the sort.
func ComparePending(a, b *Gang) int { return comparePending(a, b, OrderFairShare) }

// comparePending is sortPending's order on the gangs themselves.
func comparePending(a, b *Gang, o Order) int {
	if o != OrderFIFO && a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if c := a.Submitted.Compare(b.Submitted); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
