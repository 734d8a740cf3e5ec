// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// maxPreemptionDomains bounds how many domains a preemption search tries.
const maxPreemptionDomains = 8

// strandedHours is what a preemption is charged, per GPU, for each GPU its
// victims free beyond those the preemptor takes: they idle until a waiting
// gang fits there, and the victim waits to run again.
const strandedHours = 0.25

// victim is a running gang that may be preempted for the current gang.
type victim struct {
	al   *allocation
	cost float64 // GPU-hours lost
	at   int32   // index in cycle.victims
	term bool    // in cycle.victims: terminating (Input.Terminating, or chosen this cycle)
	// lo, hi delimit the victim's nodes in cycle.vnodes.
	lo, hi int32
	prio   int32  // al.Gang.Priority
	id     string // al.Gang.ID
}

// vnode is one node of a victim as the preemption search reads it, laid
// out with the victim's other nodes so that a pass over the candidates
// reads memory in order instead of the fleet's nodes at random.
type vnode struct {
	class int32
	gpus  int32
	dom   [numLevels]int32
}

// preempt looks for the cheapest set of whole gangs whose removal lets g fit
// in one domain of its ceiling level, across all clusters; it emits the
// preemptions, holds the domain for g and reports whether it found any.
func (c *cycle) preempt(g *Gang, r *request) bool {
	if c.young(g) {
		return false // young gangs usually find room as others end
	}
	c.attempts++
	// Preempt only when waiting would cost more: the gang's GPUs idle until
	// the nodes a reservation would hold are expected to drain.
	maxCost := math.Inf(1)
	if _, _, nodes, ok := c.plan(r); ok {
		t, known := c.s.drainTime(nodes, c.in.Now.UnixNano())
		wait := time.Duration(t - c.in.Now.UnixNano())
		if !known {
			wait = time.Duration(math.MaxInt64)
		}
		if wait <= c.cfg.preemptAfter {
			return false
		}
		if known {
			maxCost = wait.Hours() * float64(g.GPUs())
		}
	}
	if f := c.cfg.lossPerWait; f >= 0 && c.budgeted(g) {
		waited := c.in.Now.Sub(g.Submitted) - c.cfg.preemptAfter
		maxCost = min(maxCost, f*waited.Hours()*float64(g.GPUs()))
	}
	// The candidates last: a gang that would rather wait needs none (the
	// checks above read nothing the candidates change, nor they anything).
	cands := c.candidates(g)
	if len(cands) == 0 {
		return false
	}
	l := min(r.ceil, lvCluster)
	doms := c.rankDomains(r, l, cands)
	var best []victim
	var bestNodes []int32
	bestCost, bestDom := 0.0, int32(-1)
	byDom := c.touching(l, doms, cands)
	for k, d := range doms {
		vs, nodes, cost, ok := c.tryDomain(r, l, d, byDom[k])
		if ok && (bestDom < 0 || cost < bestCost || (cost == bestCost && len(vs) < len(best))) {
			best, bestNodes, bestCost, bestDom = vs, nodes, cost, d
		}
	}
	if bestDom < 0 || bestCost > maxCost || bestCost > 0 && bestCost == maxCost {
		return false
	}
	if c.checkpointSoon(g, best, bestCost) {
		return false // cheaper at the victims' next checkpoint reports
	}
	c.preempted++
	if rid, ok := c.resByGang[g.ID]; ok {
		c.drop(rid)
	}
	c.waiting[g.ID] = true
	c.hold(g.ID, l, bestDom, bestNodes, false) // victims leave within their grace: no backfill
	where := c.s.levels[l][bestDom].name
	for _, v := range best {
		c.in.markTerminating(v.al.Gang.ID, g.ID)
		c.victims[v.at].term = true
		c.chosen++
		c.d.Preemptions = append(c.d.Preemptions, Preemption{
			Victim: v.al.Gang.ID, Preemptor: g.ID, Grace: v.al.Gang.GracePeriod, GPUHoursLost: v.cost,
			Reason: preemptReason(victimWhy(&v.al.Gang, g), g, where, v.cost),
		})
	}
	return true
}

// idPrefix returns the first 16 bytes of s, zero-padded, as two big-endian
// words: where two strings' words differ, they order the strings as
// strings.Compare does (the first differing byte, or the shorter string's
// end against a non-zero byte, decides); where they are equal, the strings
// must be compared.
func idPrefix(s string) (uint64, uint64) {
	var b [16]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// young reports whether g has waited less than the preempt-after time: it
// does not preempt yet.
func (c *cycle) young(g *Gang) bool {
	return !g.Submitted.IsZero() && c.in.Now.Sub(g.Submitted) < c.cfg.preemptAfter
}

// checkpointSoon reports whether waiting for the chosen victims' next
// checkpoints costs less than preempting them now: every victim that would
// lose work reports its next checkpoint (expected one interval after its
// last, not yet overdue) before g's GPUs have waited as many GPU-hours as
// the victims and the GPUs they strand would lose. The cycle runs again on
// each report, when such a victim loses nothing.
func (c *cycle) checkpointSoon(g *Gang, vs []victim, cost float64) bool {
	if cost <= 0 {
		return false
	}
	var last time.Duration
	for _, v := range vs {
		if v.cost == 0 {
			continue
		}
		next, ok := nextCheckpoint(v.al, c.in.Now)
		if !ok || next.Before(c.in.Now) {
			return false
		}
		last = max(last, next.Sub(c.in.Now))
	}
	return last.Hours()*float64(g.GPUs()) < cost
}

// nextCheckpoint is when a running gang is expected to report its next
// checkpoint: one interval after its last (or its start); ok is false when
// it has not reported an interval.
func nextCheckpoint(al *allocation, now time.Time) (time.Time, bool) {
	if al.CheckpointInterval <= 0 {
		return time.Time{}, false
	}
	since := al.startedBy(now)
	if al.LastCheckpoint.After(since) {
		since = al.LastCheckpoint
	}
	return since.Add(al.CheckpointInterval), true
}

// budgeted reports whether g's preemptions are held to the lost-work
// budget: a gang below production priority, of a queue that does not
// reclaim its quota (a guarantee is not delayed), that has waited less
// than lossBudgetWait beyond the preempt-after time (victims that never
// checkpoint lose work faster than the budget grows, so it ends).
func (c *cycle) budgeted(g *Gang) bool {
	if g.Submitted.IsZero() || g.Priority >= PriorityProduction || c.cfg.reclaim || c.qt.reclaims(g.Queue) {
		return false
	}
	return c.in.Now.Sub(g.Submitted)-c.cfg.preemptAfter < c.cfg.lossBudgetWait
}

// candidates lists the running gangs g may preempt, cheapest first: lower
// priority and preemptible, or (reclaim) same or lower priority from a queue
// borrowing beyond its nominal quota while g's queue stays within its own
// (victimWhy words which).
//
// Without reclaim they depend on g's priority alone, as long as no victim
// was chosen since (and g itself does not run): the list is kept for the
// next search by a gang of that priority (candCache). Callers must not
// change it.
func (c *cycle) candidates(g *Gang) []victim {
	reclaim := false
	if c.cfg.reclaim || c.qt.reclaims(g.Queue) {
		for _, want := range c.candidateUses(g) {
			reclaim = reclaim || c.qt.withinNominal(g.Queue, want, g.GPUs())
		}
	}
	_, runs := c.s.allocs.get(g.ID)
	cache := !reclaim && !runs
	if m, ok := c.candCache[g.Priority]; cache && ok && m.chosen == c.chosen {
		return m.cands
	}
	vs := c.preemptible()
	if cache && c.chosen == 0 {
		// No victim is terminating: the candidates are the victims of
		// lower priority, a prefix of the list.
		k, _ := slices.BinarySearchFunc(vs, g.Priority, func(v victim, p int32) int { return cmp.Compare(v.prio, p) })
		return vs[:k:k]
	}
	var out []victim
	for k := range vs {
		pv := &vs[k]
		if pv.prio > g.Priority {
			break // sorted by priority: none further may be preempted
		}
		if pv.term || pv.id == g.ID {
			continue
		}
		if v := &pv.al.Gang; pv.prio == g.Priority && (!reclaim || v.Queue == g.Queue || !c.qt.surplus(v.Queue, c.s.allocUse(pv.al))) {
			continue // same priority: only a borrowing queue's surplus, under reclaim
		}
		out = append(out, *pv)
	}
	if cache {
		c.candCache[g.Priority] = candMemo{c.chosen, out}
	}
	return out
}

// candMemo is a priority's candidates while chosen stays the same.
type candMemo struct {
	chosen int
	cands  []victim
}

// victimWhy says why running gang v may be preempted for g (candidates).
func victimWhy(v, g *Gang) string {
	if v.Priority < g.Priority {
		return fmt.Sprintf("priority %d below %d", v.Priority, g.Priority)
	}
	return fmt.Sprintf("queue %s borrows beyond its nominal quota and %s reclaims it", v.Queue, g.Queue)
}

// preemptible returns the preemptible running gangs, cheapest first
// (priority, then GPU-hours lost, then ID), listed and sorted once per
// cycle at its first preemption search: candidates filters it in order.
// Gangs placed earlier in the cycle, and gangs already terminating, are
// left out: no gang listed can be placed later in the cycle (Assume refuses
// a gang that runs), nor released (a cycle releases nothing), and the
// victims a cycle chooses are marked terminating in the list.
func (c *cycle) preemptible() []victim {
	if c.victims != nil {
		return c.victims
	}
	c.victims = make([]victim, 0, c.s.allocs.len())
	for id, al := range c.s.allocs.all() {
		if al.Gang.Preemptible && al.placedIn != c.gen && c.in.Terminating[id] == "" {
			c.victims = append(c.victims, victim{al: al, cost: c.lostHours(al), prio: al.Gang.Priority, id: id})
		}
	}
	// Sort compact keys, then lay the victims out in their order. Costs
	// tie often (gangs started together lose alike), so the keys carry the
	// IDs' first 16 bytes too (idPrefix); whole IDs are compared only when
	// those are the same.
	type key struct {
		cost     float64
		id0, id1 uint64
		prio, at int32
	}
	keys := make([]key, len(c.victims))
	for k := range c.victims {
		v := &c.victims[k]
		id0, id1 := idPrefix(v.id)
		keys[k] = key{v.cost, id0, id1, v.prio, int32(k)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.prio != b.prio {
			return cmp.Compare(a.prio, b.prio)
		}
		if a.cost != b.cost {
			return cmp.Compare(a.cost, b.cost)
		}
		if a.id0 != b.id0 {
			return cmp.Compare(a.id0, b.id0)
		}
		if a.id1 != b.id1 {
			return cmp.Compare(a.id1, b.id1)
		}
		return strings.Compare(c.victims[a.at].id, c.victims[b.at].id)
	})
	sorted := make([]victim, len(keys))
	for k, x := range keys {
		sorted[k] = c.victims[x.at]
	}
	c.victims = sorted
	c.vnodes = make([]vnode, 0, 2*len(c.victims)) // about their nodes; append grows it
	for k := range c.victims {
		v := &c.victims[k]
		v.at, v.lo = int32(k), int32(len(c.vnodes))
		for j, i := range v.al.nodes {
			n := &c.s.nodes[i]
			c.vnodes = append(c.vnodes, vnode{class: n.class, gpus: v.al.gpus[j], dom: n.dom})
		}
		v.hi = int32(len(c.vnodes))
	}
	return c.victims
}

// lostHours estimates the GPU-hours a victim loses when it is stopped at
// the end of its grace: GPUs × time since its last checkpoint (or start),
// or nothing when its next checkpoint, expected one interval after the
// last and not yet overdue, falls within the grace (it reports it and is
// stopped then).
func (c *cycle) lostHours(al *allocation) float64 {
	since := al.startedBy(c.in.Now)
	if al.LastCheckpoint.After(since) {
		since = al.LastCheckpoint
	}
	stop := c.in.Now.Add(al.Gang.GracePeriod)
	if next, ok := nextCheckpoint(al, c.in.Now); ok && !next.Before(c.in.Now) && !next.After(stop) {
		return 0 // an overdue checkpoint is not counted on
	}
	h := stop.Sub(since).Hours()
	if h < 0 {
		h = 0
	}
	gpus := 0
	for _, g := range al.gpus {
		gpus += int(g)
	}
	return h * float64(gpus)
}

// rankDomains returns the domains of level l where free GPUs plus the
// candidates' GPUs could hold the gang, most promising first.
func (c *cycle) rankDomains(r *request, l int, cands []victim) []int32 {
	pot := int32s(&c.s.scratch.pot, len(c.s.levels[l])) // by domain; touched lists those > 0
	var touched []int32
	for _, v := range cands {
		for _, vn := range c.vnodes[v.lo:v.hi] {
			if r.classOK[vn.class] {
				d := vn.dom[l]
				if pot[d] == 0 {
					touched = append(touched, d)
				}
				pot[d] += vn.gpus
			}
		}
	}
	need := r.need * r.gpm
	var out []int32
	for _, d := range touched {
		dom := &c.s.levels[l][d]
		if r.clusterOK[dom.cluster] && c.s.dfree[l][d]+pot[d] >= need {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a := c.s.dfree[l][out[i]] + pot[out[i]]
		b := c.s.dfree[l][out[j]] + pot[out[j]]
		if a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	if len(out) > maxPreemptionDomains {
		out = out[:maxPreemptionDomains]
	}
	return out
}

// touching returns, for each of the domains of level l, the candidates
// with GPUs in it, in candidate order (cheapest first), from one pass over
// the candidates.
func (c *cycle) touching(l int, doms []int32, cands []victim) [][]victim {
	out := make([][]victim, len(doms))
	if len(doms) == 0 {
		return out
	}
	pos := int32s(&c.s.scratch.pot, len(c.s.levels[l])) // domain → its place in doms + 1
	for k, d := range doms {
		pos[d] = int32(k + 1)
	}
	last := make([]int, len(doms)) // the last candidate added to each list + 1
	for j, v := range cands {
		for _, vn := range c.vnodes[v.lo:v.hi] {
			if k := pos[vn.dom[l]] - 1; k >= 0 && last[k] != j+1 {
				out[k] = append(out[k], v)
				last[k] = j + 1
			}
		}
	}
	return out
}

// tryDomain releases candidates (those touching domain d), cheapest first, until
// the gang fits there, then puts back every one it turns out not to need.
// Its cost is the victims' lost work plus strandedHours for each GPU they
// free beyond the gang's. The snapshot is left as it was.
func (c *cycle) tryDomain(r *request, l int, d int32, cands []victim) ([]victim, []int32, float64, bool) {
	r.within, r.withinDom = l, d
	defer func() { r.within = -1 }()
	var taken []victim
	fits := false
	for _, v := range cands {
		c.s.unbook(v.al)
		taken = append(taken, v)
		if _, _, _, ok := c.s.place(r); ok {
			fits = true
			break
		}
	}
	if !fits {
		for _, v := range taken {
			c.s.rebook(v.al)
		}
		return nil, nil, 0, false
	}
	// Keep back the most expensive victims the gang does not need.
	var need []victim
	for i := len(taken) - 1; i >= 0; i-- {
		c.s.rebook(taken[i].al)
		if _, _, _, ok := c.s.place(r); ok {
			continue
		}
		c.s.unbook(taken[i].al)
		need = append(need, taken[i])
	}
	picks, _, _, _ := c.s.place(r)
	nodes := make([]int32, 0, len(picks))
	for _, pk := range picks {
		nodes = append(nodes, pk.node)
	}
	cost := 0.0
	var freed int32
	for _, v := range need {
		c.s.rebook(v.al)
		cost += v.cost
		for _, n := range v.al.gpus {
			freed += n
		}
	}
	if used := r.need * r.gpm; freed > used {
		cost += strandedHours * float64(freed-used) // see strandedHours
	}
	sort.Slice(need, func(i, j int) bool { return need[i].al.Gang.ID < need[j].al.Gang.ID })
	return need, nodes, cost, true
}

// markTerminating records a victim chosen in this cycle.
func (in *Input) markTerminating(victim, preemptor string) {
	if in.Terminating == nil {
		in.Terminating = map[string]string{}
	}
	in.Terminating[victim] = preemptor
}

// preemptReason says why a victim is preempted for g.
func preemptReason(why string, g *Gang, where string, cost float64) string {
	if len(g.Roles) > 0 {
		return fmt.Sprintf("%s; frees room for %s (%s) in %s; cheapest choice there: %.1f GPU-hours lost",
			why, g.ID, g.Shape(), where, cost)
	}
	return fmt.Sprintf("%s; frees room for %s (%d×%d GPUs) in %s; cheapest choice there: %.1f GPU-hours lost",
		why, g.ID, g.Members, g.GPUsPerMember, where, cost)
}
